"""Figures of multi-axis variants are readable: short labels from the axis values that differ,
a caption with the full names, no tick label over another, every text inside the figure.

Drawn from synthetic per-seed values for the real norm_placement grids (5 variants of 4 axes in
its confirm profile, all 16 in smoke); the renderer measures every text's bounding box.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure
from matplotlib.text import Text

from harness.analysis import paired as ranks
from harness.experiment.ablation import load
from harness.report import figures


def test_short_labels_keep_the_axes_that_differ() -> None:
    abl = load("norm_placement").for_profile("confirm")
    short, caption = figures.short_labels([abl.label(v) for v in abl.variants()])
    assert short == [
        "pre · wu 0 · layernorm",
        "pre · wu 100 · layernorm",
        "pre · wu 100 · norm none",
        "post · wu 0 · layernorm",
        "post · wu 100 · layernorm",
    ]
    assert caption == (
        "pre/post: norm_position; wu 0/wu 100: warmup_steps; layernorm/norm none: norm; every variant: n_layers=6"
    )
    assert figures.short_labels(["rope", "alibi"]) == (["rope", "alibi"], "")  # one axis: unchanged
    assert figures.short_labels(["a=1,b=x", "a=2,b=x"]) == (["a 1", "a 2"], "a 1/a 2: a; every variant: b=x")


def _drawn(monkeypatch: pytest.MonkeyPatch, draw) -> Figure:
    """The figure ``draw`` saved (its text laid out as in the PNG)."""
    kept = []
    save = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda fig, *a, **k: (kept.append(fig), save(fig, *a, **k))[1])
    draw()
    (fig,) = kept
    return fig


def _boxes(fig: Figure, texts: list[Text]):
    renderer = fig.canvas.get_renderer()
    return [t.get_window_extent(renderer) for t in texts if t.get_visible() and t.get_text().strip()]


def _undrawn(fig: Figure) -> set[int]:
    """Tick labels of ticks outside the view limits: matplotlib keeps but never draws them."""
    out = set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            out |= {
                id(label)
                for tick in axis.get_major_ticks()
                if not lo <= tick.get_loc() <= hi
                for label in (tick.label1, tick.label2)
            }
    return out


def _check_layout(fig: Figure, ticks: list[Text]) -> None:
    boxes = _boxes(fig, ticks)
    assert len(boxes) == len(ticks)
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert not a.overlaps(b), (a, b)
    frame = fig.bbox
    texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip() and id(t) not in _undrawn(fig)]
    for text, box in zip(texts, _boxes(fig, texts)):
        assert (
            frame.x0 - 1 <= box.x0 and box.x1 <= frame.x1 + 1 and frame.y0 - 1 <= box.y0 and box.y1 <= frame.y1 + 1
        ), (text.get_text(), box, frame)


@pytest.mark.parametrize("profile, seeds", [("confirm", 8), ("smoke", 3)])
def test_norm_placement_figures_are_readable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, profile: str, seeds: int
) -> None:
    abl = load("norm_placement").for_profile(profile)
    labels = [abl.label(v) for v in abl.variants()]
    short, caption = figures.short_labels(labels)
    wide = pd.DataFrame(np.random.default_rng(0).normal(2.2, 0.2, (seeds, len(labels))), columns=labels)

    fig = _drawn(
        monkeypatch,
        lambda: figures.paired_lines(
            wide, "loss@x1", False, "tinyshakespeare: loss@x1 per seed", tmp_path / "per-seed.png"
        ),
    )
    ticks = fig.axes[0].get_xticklabels()
    assert [t.get_text().rsplit("\n", 1)[0].replace("\n", " · ") for t in ticks] == short  # one value a line
    assert any(caption.split(";")[0] in t.get_text() for t in fig.findobj(Text))
    _check_layout(fig, ticks)

    res = ranks.friedman(wide, False, 0.05)
    fig = _drawn(
        monkeypatch,
        lambda: figures.critical_difference(
            res.mean_ranks, res.cd, 0.05, "tinyshakespeare: mean ranks of loss@x1", tmp_path / "ranks.png"
        ),
    )
    ticks = fig.axes[0].get_yticklabels()
    assert sorted(t.get_text() for t in ticks) == sorted(short)
    _check_layout(fig, ticks)
    assert (tmp_path / "per-seed.png").stat().st_size > 1000 and (tmp_path / "ranks.png").stat().st_size > 1000


@pytest.mark.parametrize("passes", [1, 2])
def test_a_probe_of_one_validation_pass_draws_no_curve(tmp_path: Path, passes: int) -> None:
    """A probe (ln_grad_init: one step, one validation pass) has no curve to draw: one point per
    run is no training curve, so the report shows none; two passes draw one."""
    from harness.cli.report import report as write_report
    from harness.experiment.selection import select
    from helpers.fake_store import write_decl, write_runs

    decl = write_decl(tmp_path / "decl", cpu={"seeds": [0, 1, 2]})
    results = tmp_path / "results"
    write_runs(results, decl, "cpu", lambda v, s: 0.5 + 0.01 * s)
    for folder in (results / "mini" / "cpu").iterdir():
        rows = "".join(f"{5 * (i + 1)},2.5,0.{i + 3}\n" for i in range(passes))
        (folder / "history.csv").write_text("step,loss,acc\n" + rows)
    abl = load(str(decl))
    sel = select(abl, "cpu", check_data=False)
    md = write_report(sel.ablation.source, sel.profile, results, tmp_path / "out").read_text()
    assert ("validation curves" in md) == (passes > 1), md


NOTEBOOK_BACKEND = "module://matplotlib_inline.backend_inline"
"""What a Jupyter kernel sets MPLBACKEND to; matplotlib_inline is not installed here."""


def test_a_report_drawn_where_mplbackend_names_a_notebook_backend(tmp_path: Path) -> None:
    # it was a traceback (matplotlib refuses the backend on import), exit 1, no report, figures/ empty
    from helpers.fake_store import write_decl, write_runs

    decl = write_decl(tmp_path / "decl", cpu={"seeds": [0, 1, 2]})
    write_runs(tmp_path / "results", decl, "cpu", lambda v, s: 0.5 + 0.01 * s)
    env = {**os.environ, "MPLBACKEND": NOTEBOOK_BACKEND, "ABLATE_CACHE_DIR": str(tmp_path / "cache")}
    args = ["report", str(decl), "--profile", "cpu", "--results-dir", "results", "--out", "reports"]
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert (tmp_path / "reports" / "mini.md").is_file()
    pngs = list((tmp_path / "reports" / "figures").glob("*.png"))
    assert pngs and all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)


def test_a_report_whose_figure_fails_leaves_no_figures_folder(tmp_path: Path, monkeypatch) -> None:
    from harness.cli.report import report as write_report
    from helpers.fake_store import write_decl, write_runs

    decl = write_decl(tmp_path / "decl", cpu={"seeds": [0, 1, 2]})
    write_runs(tmp_path / "results", decl, "cpu", lambda v, s: 0.5 + 0.01 * s)

    def broken(fig, *args, **kwargs):
        raise RuntimeError("the renderer failed")

    monkeypatch.setattr(Figure, "savefig", broken)
    with pytest.raises(RuntimeError, match="the renderer failed"):
        write_report(str(decl), "cpu", tmp_path / "results", tmp_path / "out")
    assert not (tmp_path / "out" / "figures").exists()


def test_a_report_without_figures_has_no_figures_folder(tmp_path: Path, monkeypatch) -> None:
    from harness.cli.report import report
    from harness.report import markdown
    from helpers.fake_store import write_decl, write_runs

    decl = write_decl(tmp_path / "decl", cpu={"seeds": [0, 1, 2]})
    write_runs(tmp_path / "results", decl, "cpu", lambda v, s: 0.5 + 0.01 * s)
    monkeypatch.setattr(markdown, "_results_section", lambda *args: ["## Results", ""])  # draws nothing
    out = tmp_path / "new" / "out"
    path = report(str(decl), "cpu", tmp_path / "results", out)
    assert path == out / "mini.md" and path.is_file()
    assert not (out / "figures").exists()
