"""A report page is its sections (issue 35, item 3): one module per section, listed once, each returning what
it shows or None, one way to show one; and the configuration's keys are spelled in at most 2 report modules,
the others read them from core.config's axes (through reports/configs.py)."""

import ast
import pkgutil
from pathlib import Path

import pytest

from benchbook.core import catalog
from benchbook.errors import UnknownNameError
from benchbook.reports import display, sections
from benchbook.reports.report import Report
from benchbook.reports.sections import Page, show

LIB = Path(__file__).resolve().parents[1] / "lib" / "benchbook"
REPORTS = LIB / "reports"
FIXTURES = Path(__file__).parent / "fixtures"


def test_every_section_module_is_listed_once_and_has_one_content_function():
    found = {m.name for m in pkgutil.iter_modules([str(REPORTS / "sections")]) if not m.ispkg} - {"parts"}
    own = {m.name for m in pkgutil.iter_modules([str(REPORTS / "sections" / "own")])}
    assert found == set(sections.SECTIONS) and own == set(sections.OWN)
    assert len(sections.SECTIONS + sections.OWN) == len(set(sections.SECTIONS + sections.OWN))
    for name in sections.SECTIONS + sections.OWN:
        assert callable(sections.module(name).content), name


def test_an_unknown_section_is_refused_naming_the_known_ones():
    with pytest.raises(UnknownNameError, match="unknown report section 'scalling'; known: about, "):
        show(Report(log_dir=FIXTURES / "ngc_tf1"), "scalling")


def test_a_section_with_nothing_to_show_is_none_and_one_with_something_carries_its_heading(tmp_path):
    """Logs of one TF1 run, no reference: no reproduction, no difference from a published set-up, no scaling,
    no repeats, no per-epoch rates, no loss components; the set-up, runs and failures are shown."""
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "tf_gpu1_amp_bs256.log").write_text((FIXTURES / "ngc_tf1" / "tf_gpu1_amp_bs256.log").read_text())
    page = Page(Report(log_dir=logs), "ResNet-50")
    for name in ("reproduction", "differences", "reproduction_plot", "scaling", "scaling_plot", "repeats",
                 "setup_needed", "explore"):
        assert page.show(name) is None, name
    assert page.show("epoch_rates", heading="Epoch rates") is None
    assert page.show("loss_components", heading="Loss components", intro="x") is None
    assert page.show("setup").markup.startswith('<h2 id="1--set-up">1. Set-up</h2>')
    assert page.show("failures").plain.startswith("3. Failures and problems")  # no reference: no section 3
    assert page.show("opening").plain.startswith("ResNet-50: training throughput, logs (analysis-only)")
    shown = page.show("iteration_rates", heading="Per-iteration rates", intro="Why.")
    assert isinstance(shown, display.Html) and shown.plain.startswith("Per-iteration rates\nWhy.")


# Report modules that spell a configuration's keys: configs.py reads them from core.config's axes for all the
# others (reference_compare.py and reference_differences.py read them through models/reference_schema.py).
ALLOWED = {"configs.py"}
LEFT: set[str] = set()
# The machine capture's `gpus` section (environment/capture/record.py SECTIONS) is no configuration's key,
# nor a library's name in a capture (`dali`): read through these receivers or held by these names.
CAPTURE = {"capture", "env"}
CAPTURE_NAMES = {"GPU_SECTION", "_LIBRARY_LABELS"}


def _spelled(path: Path, keys: set[str]) -> set[str]:
    """The configuration keys `path` spells: as a text (a column, a mapping's key) or a keyword (`assign(gpus=)`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    capture = {id(n.args[0]) for n in ast.walk(tree) if isinstance(n, ast.Call) and n.args
               and isinstance(n.func, ast.Attribute) and n.func.attr == "get"
               and isinstance(n.func.value, ast.Name) and n.func.value.id in CAPTURE}
    capture |= {id(c) for n in ast.walk(tree) if isinstance(n, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id in CAPTURE_NAMES for t in n.targets)
                for c in ast.walk(n.value)}
    texts = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value in keys
             and id(n) not in capture}
    return texts | {n.arg for n in ast.walk(tree) if isinstance(n, ast.keyword) and n.arg in keys}


def test_at_most_two_report_modules_spell_a_configurations_keys():
    # framework and model are axes too, but also words of other things a report names (a CPU's model)
    keys = set(catalog.default().run_keys()) - {"framework", "model"}
    spelled = {p.relative_to(REPORTS).as_posix(): _spelled(p, keys) for p in sorted(REPORTS.rglob("*.py"))}
    spelled = {name: found for name, found in spelled.items() if found}
    assert set(spelled) - LEFT <= ALLOWED, {k: v for k, v in spelled.items() if k not in LEFT | ALLOWED}


def test_the_spelling_check_sees_a_key_as_text_and_as_keyword(tmp_path):
    module = tmp_path / "m.py"
    module.write_text('a = frame["gpus"]\nb = frame.assign(precision=1)\nc = capture.get("gpus")\n')
    assert _spelled(module, {"gpus", "precision"}) == {"gpus", "precision"}
    module.write_text('c = capture.get("gpus")\nd = env.get("gpus")\n')
    assert _spelled(module, {"gpus"}) == set()
