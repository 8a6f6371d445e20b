"""The report's setup line states the FFN width the run trained with (``FFNSection.width``)."""

from __future__ import annotations

from harness.experiment.ablation import load
from harness.experiment.grid import plan
from harness.report.markdown import _setup_section
from helpers.fake_store import write_decl


def _line(tmp_path, **ffn) -> str:
    decl = write_decl(tmp_path / "decl")
    abl = load(str(decl))
    spec = plan(abl, "cpu", [f"ffn.{k}={v}" for k, v in ffn.items()], check_data=False)[1][0]
    record = {
        "task": spec.task,
        "task_version": spec.task_version,
        "task_params": spec.task_params,
        "variant_label": spec.variant_label,
        "config": spec.config.model_dump(mode="json"),
    }
    return next(line for line in _setup_section(abl, "cpu", [record]) if line.startswith("- Task"))


def test_d_ff_follows_d_ff_mult(tmp_path):
    assert ", d_ff 32, " in _line(tmp_path, d_ff_mult=2)  # d_model 16; was 4 x d_model = 64


def test_d_ff_default_and_absolute(tmp_path):
    assert ", d_ff 64, " in _line(tmp_path)
    assert ", d_ff 40, " in _line(tmp_path / "abs", d_ff=40)
