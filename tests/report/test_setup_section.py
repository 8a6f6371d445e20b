"""The report's setup line states the FFN width the run trained with (``FFNSection.width``)."""

from __future__ import annotations

from harness.execution.attempt import spec_record
from harness.experiment.ablation import load
from harness.experiment.grid import plan
from harness.report.sections import setup_section
from harness.store.record import Record
from helpers.fake_store import write_decl


def _line(tmp_path, **ffn) -> str:
    decl = write_decl(tmp_path / "decl")
    abl = load(str(decl))
    spec = plan(abl, "cpu", [f"ffn.{k}={v}" for k, v in ffn.items()], check_data=False)[1][0]
    record = spec_record(spec, status="ok", metrics={})
    return next(line for line in setup_section(abl, "cpu", [record]) if line.startswith("- Task"))


def test_d_ff_follows_d_ff_mult(tmp_path):
    assert ", d_ff 32, " in _line(tmp_path, d_ff_mult=2)  # d_model 16; was 4 x d_model = 64


def test_d_ff_default_and_absolute(tmp_path):
    assert ", d_ff 64, " in _line(tmp_path)
    assert ", d_ff 40, " in _line(tmp_path / "abs", d_ff=40)


def test_the_setup_names_every_plugin_the_runs_were_made_with(tmp_path):
    decl = write_decl(tmp_path / "decl")
    abl = load(str(decl))
    spec = plan(abl, "cpu", [], check_data=False)[1][0]
    base = spec_record(spec, status="ok", metrics={})

    def made_with(*plugins: dict) -> Record:
        return base.model_copy(update={"plugins": list(plugins)})

    assert not any(line.startswith("- Plugins") for line in setup_section(abl, "cpu", [base, made_with()]))
    packaged = {"distribution": "my-plugin", "version": "0.2", "module": "m", "entries": ["position:x", "task:y"]}
    loose = {
        "distribution": None,
        "version": None,
        "module": "f",
        "entries": [],
        "path": "/p/extra.py",
        "sha256": "ab" * 32,
    }
    lines = setup_section(abl, "cpu", [made_with(packaged), made_with(packaged, loose)])
    assert "- Plugins: my-plugin 0.2 (position:x, task:y); /p/extra.py (sha256 abababababab) (no entries)." in lines


def test_one_layer_is_singular_and_no_double_space(tmp_path):
    """It read "1 layers" and, for a task without parameters, "v1  (baseline"."""
    line = _line(tmp_path)  # the mini declaration: 2 heads, 1 layer
    assert "  " not in line, line
    assert ", 2 heads, 1 layer, d_ff" in line, line
    abl = load(str(write_decl(tmp_path / "d1")))
    spec = plan(abl, "cpu", ["model.n_heads=1", "model.n_layers=3"], check_data=False)[1][0]
    one = next(
        x for x in setup_section(abl, "cpu", [spec_record(spec, status="ok", metrics={})]) if x.startswith("- Task")
    )
    assert ", 1 head, 3 layers, d_ff" in one, one
