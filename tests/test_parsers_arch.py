"""The parsers name a run's model from its log where the log says it (`arch`), through the names the models
declare (`ModelSpec.log_arches`): a ResNeXt log of NVIDIA's ConvNets scripts is never labelled ResNet-50."""

from __future__ import annotations

import pytest

from benchbook import analyze, models
from benchbook.core import catalog


def _log(tmp_path, fixtures, fixture: str, old: str, new: str, name: str | None = None):
    """A copy of one of the project's fixtures with the model its log names changed."""
    text = (fixtures / fixture).read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / (name or fixture.split("/")[-1])
    path.write_text(text.replace(old, new), encoding="utf-8")
    return path


def _runs(path):
    return analyze([path]).runs


@pytest.mark.parametrize(("fixture", "old", "new"), [
    ("ngc_tf1/tf_gpu8_fp32_bs128_imgs_per_sec.log", "arch : resnet50", "arch : resnext101-32x4d"),
    ("ngc_pytorch/pytorch_gpu2_amp_bs128_default_backend.txt", "resnet50", "resnext101-32x4d"),
])
def test_a_resnext_log_is_labelled_resnext_with_a_warning(tmp_path, fixtures, fixture, old, new):
    runs = _runs(_log(tmp_path, fixtures, fixture, old, new))
    assert set(runs["model"]) == {"resnext101-32x4d"}
    for warnings in runs["warnings"]:
        said = [w for w in warnings if "(arch)" in w]
        assert said and "'resnext101-32x4d'" in said[0] and "resnet50" in said[0]
        assert "labelled 'resnext101-32x4d', not 'resnet50'" in said[0]


def test_the_names_models_declare_label_their_logs(tmp_path, fixtures):
    tf1 = _runs(fixtures / "ngc_tf1" / "tf_gpu8_fp32_bs128_imgs_per_sec.log")
    assert set(tf1["model"]) == {"resnet50"} and not any("(arch)" in w for ws in tf1["warnings"] for w in ws)
    spelled = _runs(_log(tmp_path, fixtures, "ngc_tf1/tf_gpu8_fp32_bs128_imgs_per_sec.log", "arch : resnet50",
                         "arch : ResNet-50"))
    assert set(spelled["model"]) == {"resnet50"}  # one name without case or punctuation
    assert catalog.default().arch("mxnet", "resnetv15-50") == ("resnet50", "resnetv15-50")  # resnet50_mxnet's
    assert {spec.log_names[1] for spec in models.specs() if spec.log_arches} == {"resnet50"}


def test_mxnet_names_its_model_by_arch_and_layers(tmp_path, fixtures):
    dll = "ngc_mxnet/mxnet_dllogger_fp32_bs96.txt"
    assert set(_runs(fixtures / dll)["model"]) == {"resnet50"}  # resnetv15, num_layers 50
    deeper = _runs(_log(tmp_path, fixtures, dll, "num_layers : 50", "num_layers : 101"))
    assert set(deeper["model"]) == {"resnetv15-101"}
    resnext = _runs(_log(tmp_path, fixtures, "ngc_mxnet/mxnet_gpu1_gpu4_amp_bs64.txt", "arch='resnetv15'",
                         "arch='resnextv15'"))
    assert set(resnext["model"]) == {"resnextv15-50"}  # the layers are the script's default where not printed
    assert all(any("(arch)" in w for w in ws) for ws in resnext["warnings"])


def test_a_logged_name_that_is_no_name_is_unknown(tmp_path, fixtures):
    runs = _runs(_log(tmp_path, fixtures, "ngc_tf1/tf_gpu8_fp32_bs128_imgs_per_sec.log", "arch : resnet50",
                      "arch : ../../x"))
    assert set(runs["model"]) == {"unknown"}
    assert any("labelled 'unknown', not 'resnet50'" in w for w in runs.iloc[0]["warnings"])


def test_one_name_for_two_models_is_refused():
    once = catalog.Part(arches=(("tensorflow", "resnet50", "resnet50"),))
    assert len(catalog.build([once, once]).arches) == 1  # the same declaration again is kept once
    with pytest.raises(ValueError, match="declared for 'resnet50' and 'resnext101'"):
        catalog.build([once, catalog.Part(arches=(("tensorflow", "resnext101", "ResNet-50"),))])
