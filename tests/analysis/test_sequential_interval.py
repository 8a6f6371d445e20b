"""The interval a group-sequential report prints is the one that decided: on ffn_width's committed data
(reports/data/ffn_width.confirm.tar.gz), recomputed from its pairs, for the verdict it gave."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from harness.analysis import looks, paired
from harness.analysis import sequential as sq
from harness.experiment import metrics
from harness.experiment.ablation import load
from harness.experiment.selection import select
from harness.report import sections
from harness.store import archive

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "reports" / "data" / "ffn_width.confirm.tar.gz"


@pytest.fixture(scope="module")
def ffn_width():
    sel = select(load(str(ROOT / "ablations" / "ffn_width.yaml")), "confirm", check_data=False)
    records = list(archive.read(DATA, str(DATA)).records.values())
    return sel, records, looks.state(sel, records)


def test_the_printed_interval_is_the_deciding_one(ffn_width):
    sel, records, st = ffn_width
    (c,) = st.comparisons
    design, m = st.design, len(st.comparisons)
    k = c.look if c.look >= 0 else st.reached - 1
    n_k = design.looks[k]
    seeds = sel.settings.seeds[:n_k]
    task = sel.ablation.tasks[c.task]
    value = {(r.variant_label, r.seed): r.metric(task.primary.metric) for r in records if r.status == "ok"}
    sign = 1 if metrics.higher_is_better(task.primary.metric) else -1
    d = np.array([sign * (value[(c.variant, s)] - value[(sel.ablation.baseline_label, s)]) for s in seeds])
    # recomputed here: the hull of the t interval at the look's bound and the bootstrap-t interval, level L
    j = round(design.alpha / c.level)
    p = design.p_table(m)[j - 1, k]
    bound = stats.t.isf(p / 2, len(d) - 1)
    se = d.std(ddof=1) / np.sqrt(len(d))
    q_low, q_high = paired.bootstrap_quantiles(paired.bootstrap_t(d[None]), [p / 2, 1 - p / 2])[0]
    # the skew guard's margin where it widened an end (the Edgeworth shift at n pairs), else 0
    widen = [sq.skew_margin(bound, len(d)) if x else 0.0 for x in c.margins]
    assert c.margins == pytest.approx(widen)
    low, high = d.mean() - max(bound + widen[0], q_high) * se, d.mean() + max(bound + widen[1], -q_low) * se
    assert c.rci == pytest.approx((low, high)) and c.bound == pytest.approx(bound)
    # the verdict is what that interval says
    held = np.isfinite(c.skewed)
    if c.outcome == sq.EQUIVALENT:
        assert -c.sesoi < low and high < c.sesoi
    elif c.outcome in (sq.BETTER, sq.WORSE):
        assert (low > 0) if c.outcome == sq.BETTER else (high < 0)
    else:
        assert held or not (low > 0 or high < 0 or -c.sesoi < low < high < c.sesoi)
    # and it is the interval the report prints, with its level and bound
    analysis = type("A", (), {"sequential": st, "ablation": sel.ablation, "table": lambda self, *a: None})()
    text = "\n".join(sections.sequential_section(analysis))
    row = next(line for line in text.splitlines() if line.startswith(f"| {c.task} |"))
    assert f"[{low:.4g}, {high:.4g}]" in row and f"{bound:.3f}" in row and f"{c.level:.3g}" in row
    assert f"{1 - c.level:.4g}" in row
    assert not pd.isna(c.t)
