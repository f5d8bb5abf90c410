"""Numbers no frame can hold and errors a user debugs (issue 49, causes 7 and 16): a log's integer past 2^63 is
that run's warning, not the end of every other file's results; BENCHBOOK_DEBUG shows one file's traceback."""

from __future__ import annotations

import pytest

from benchbook import analyze
from benchbook.logs import analysis, assemble

RECORDS = "".join(f"DLL 2021-01-01 00:00:{s:02d}.000000 - (0, {s}) total_ips : 900.0 \n" for s in (1, 2, 3))


def _log(tmp_path, name: str, batch: str):
    path = tmp_path / name
    path.write_text(f"DLL 2021-01-01 00:00:00.000000 - PARAMETER arch : resnet50  mode : training_benchmark  "
                    f"batch_size : {batch}  warmup_steps : 0  precision : fp16 \n" + RECORDS)
    return path


@pytest.mark.parametrize("batch", ["18446744073709551616", "9" * 309, "9223372036854775808"])
def test_an_integer_past_int64_is_left_unknown_with_a_short_warning_and_the_other_files_stand(tmp_path, batch):
    _log(tmp_path, "tf_gpu1_amp_bs256.log", "256")
    _log(tmp_path, "tf_gpu1_amp_bs256_huge.log", batch)
    result = analyze([tmp_path])
    assert not result.problems
    runs = result.runs.set_index("source")
    assert len(runs) == 2
    huge = runs.loc[str(tmp_path / "tf_gpu1_amp_bs256_huge.log")]
    said = [w for w in huge["warnings"] if "batch_size" in w]
    assert said and "digits" in said[0] and len(said[0]) < 120, said  # never the 309 digits
    assert runs.loc[str(tmp_path / "tf_gpu1_amp_bs256.log"), "batch_size"] == 256
    assert huge["batch_size"] == 256  # the file name's, once the log's is left out


def test_benchbook_debug_prints_one_files_traceback_and_keeps_the_others(tmp_path, monkeypatch, capsys):
    _log(tmp_path, "tf_gpu1_amp_bs256.log", "256")
    _log(tmp_path, "tf_gpu1_amp_bs256_broken.log", "256")
    runs = analysis._runs

    def failing(drafts, path, *args):
        if "broken" in str(path):
            raise KeyError("a bug")
        return runs(drafts, path, *args)

    monkeypatch.setattr(analysis, "_runs", failing)
    monkeypatch.setenv("BENCHBOOK_DEBUG", "1")
    result = analyze([tmp_path])
    err = capsys.readouterr().err
    assert len(result.runs) == 1 and len(result.problems) == 1
    assert "Traceback" in err and "KeyError: 'a bug'" in err and "broken" in err
    monkeypatch.delenv("BENCHBOOK_DEBUG")
    analyze([tmp_path])
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize(("got", "reported", "shown"), [
    (1e308, 900.0, "1e+308 differs from the reported 900.00 by 1.11e+305 times as much"),
    (1e308, 1e-300, "more than 10^308 times as much"),
    (990.0, 900.0, "990.00 differs from the reported 900.00 by +10.0%"),
])
def test_a_rate_warning_says_huge_numbers_by_their_first_digits_never_inf_percent(got, reported, shown):
    (said,) = assemble.rate_warnings(got, reported, None, "mean", 0.05, True)
    assert shown in said and "inf%" not in said and len(said) < 120, said
