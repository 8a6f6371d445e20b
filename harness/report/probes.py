"""What a report says of how its runs ended: the failures section and the per-cell probe table.

The probe table is for runs with the probes of :mod:`harness.training.probes` (e.g. ``mask_fill_fp16``), read from
every record whatever its status (a run that raised still stored the probes of its initialisation).
"""

from __future__ import annotations

import math

import pandas as pd

from harness.analysis.comparisons import Analysis, why_not_finished
from harness.encode import text
from harness.errors import STALL_FRACTION, RunStatus
from harness.report.tables import md_table
from harness.store.record import Record

PAIRS = {
    "leak into real positions: logits": "leak_logits_real",
    "leak into real positions: gradient": "leak_grad_real",
    "leak into padding rows: logits": "leak_logits",
    "NaN/inf logits (fraction)": "nonfinite_logits",
    "max attention on a masked key": "attn_masked_max",
    "attention rows with NaN/inf (fraction)": "attn_nonfinite_rows",
}
"""The probe metrics shown as ``init / final`` maxima: column -> metric."""
COLUMNS = ["cell", "finished", "how the others ended", "probe raised", *PAIRS]
COLUMNS += ["steps with NaN/inf gradients (mean of finished)"]
PROBED = ("leak_logits_init", "attn_masked_max_init", "leak_raised_init", "attn_raised_init")
"""The metrics a run with the probes holds (a value, or the probe's forward pass raised)."""


def _values(recs: list[Record], key: str) -> list[float]:
    return [x for x in (r.metric(key) for r in recs) if x is not None and not math.isnan(x)]


def _pair(recs: list[Record], key: str) -> str:
    """``init / final`` maxima over runs of one probe metric (– when undefined, ∞ when infinite)."""
    maxima = [max(_values(recs, k), default=math.nan) for k in (f"{key}_init", key)]
    return " / ".join("0 (exact)" if x == 0 else text(x, ".3g") for x in maxima)


def _mean(recs: list[Record], key: str) -> str:
    vals = _values(recs, key)
    return text(sum(vals) / len(vals)) if vals else "–"


def probe_section(result: Analysis) -> list[str]:
    """Markdown lines of the "Probes per cell" section; empty when no run carries a probe."""
    records = [r for r in result.scan.records if any(r.metric(k) is not None for k in PROBED)]
    if not records:
        return []
    abl = result.ablation  # the profile's view: analyse applied its subset
    lines = [
        "## Probes per cell",
        "",
        "Maxima over the cell's runs, at initialisation / after training, on one probe batch of the validation "
        "distribution (the same batch for every cell of a seed). Leakage: the largest change of the logits at "
        "positions <= t when the tokens after t are replaced, and the largest gradient of those logits with "
        "respect to the embeddings of later positions; a correct causal mask gives exactly 0 for both at the real "
        "(non-padding) positions. Padding rows, whose every key is masked, are shown apart: a finite fill "
        "spreads their attention over all keys, later ones included, while -inf makes them NaN. "
        "`probe raised`: runs where a probe's forward pass itself raised (no value then). A run that did not "
        "finish keeps the probes measured at initialisation.",
        "",
    ]
    for task in abl.tasks:
        recs_t = [r for r in records if r.task == task]
        if not recs_t:
            continue
        rows = []
        for v in abl.variants():
            label = abl.label(v)
            recs = [r for r in recs_t if r.variant_label == label]
            if not recs:
                continue
            ok = [r for r in recs if r.status == RunStatus.OK]
            name = f"{label} (baseline)" if label == abl.baseline_label else label
            ended = "; ".join(
                f"{n} {why}" for why, n in why_not_finished([r.status for r in recs], [r.reason for r in recs])
            )
            raised = sum(
                any(r.metric(f"{p}_raised{s}") == 1 for p in ("leak", "attn") for s in ("_init", "")) for r in recs
            )
            pairs = [_pair(recs, key) for key in PAIRS.values()]
            means = [_mean(ok, "nonfinite_grad_steps"), _mean(ok, abl.tasks[task].primary.metric)]
            rows.append([name, f"{len(ok)}/{len(recs)}", ended or "–", f"{raised}/{len(recs)}", *pairs, *means])
        metric = f"`{abl.tasks[task].primary.metric}` (mean of finished)"
        lines += [f"**{task}**", "", *md_table([*COLUMNS, metric], rows), ""]
    return lines


def failures_section(result: Analysis) -> list[str]:
    """Runs that did not finish or fell below the gate, unreadable entries, unchecked tasks, suspect numbers."""
    runs = result.runs
    bad = runs[(runs["status"] != RunStatus.OK) | ~runs["passed_gate"]]
    lines = ["## Failures, divergences, stalled runs and runs below the gate", ""]
    notes = run_notes(result.scan.records)
    if bad.empty and not result.scan.problems:
        return lines + ["None: every run finished and passed its task's gate.", "", *_unchecked(result), *notes]
    lines += stalled_lines(result.scan.records)
    for _, r in bad.sort_values(["task", "variant", "seed"]).iterrows():
        why = r["reason"] if r["status"] != RunStatus.OK else _gate_reason(result, r)
        status = r["status"] if r["status"] != RunStatus.OK else "below gate"
        lines.append(f"- `{r['task']}` {r['variant']} seed {r['seed']}: **{status}** — {why}")
    lines += [f"- unreadable store entry: `{p}`" for p in result.scan.problems]
    return lines + ["", *_unchecked(result), *notes]


def stalled_lines(records: list[Record]) -> list[str]:
    """Per task with stalled runs: how many of its runs stalled, and their best validation loss.

    The loss stands beside the task's chance level (a stalled run counts as not finished;
    :func:`harness.errors.stall_reason`).
    """
    lines = []
    for task in sorted({r.task for r in records if r.status == RunStatus.STALLED}):
        recs = [r for r in records if r.task == task]
        stalled = [r for r in recs if r.status == RunStatus.STALLED]
        best = _values(stalled, "val_loss_best")
        chance = _values(stalled, "chance_loss")
        span = f"best validation loss {text(min(best))} to {text(max(best))} nats/token" if best else ""
        bar = f" against the chance level {text(chance[0])}; stalled above {text((1 - STALL_FRACTION) * chance[0])}"
        said = f" ({span}{bar if chance else ''})" if span else ""
        lines.append(
            f"Stalled: {len(stalled)} of {len(recs)} runs of `{task}`{said}: trained to the end without "
            "learning, counted with diverged runs as not finished; their metrics stay in the comparisons, "
            "flagged in `n`."
        )
    return [*lines, ""] if lines else []


def run_notes(records: list[Record]) -> list[str]:
    """``Suspect numbers`` lines: each run's ``flags`` and ``undefined_metrics`` (:mod:`harness.training.scoring`)."""
    lines = []
    for rec in sorted(records, key=lambda r: (r.task, r.variant_label, r.seed)):
        where = f"- `{rec.task}` {rec.variant_label} seed {rec.seed}"
        lines += [f"{where}: **flagged** ({name}) — {why}" for name, why in (rec.flags or {}).items()]
        by_reason: dict[str, list[str]] = {}
        for metric, why in sorted((rec.undefined_metrics or {}).items()):
            by_reason.setdefault(why, []).append(f"`{metric}`")
        lines += [f"{where}: **no value** of {', '.join(ms)} — {why}" for why, ms in by_reason.items()]
    if not lines:
        return []
    return ["Suspect numbers (left in the tables, or counted there as without a value):", "", *lines, ""]


def _unchecked(result: Analysis) -> list[str]:
    """Tasks of the grid that declare neither a gate nor a convergence target: nothing checks them."""
    tasks = sorted(
        t for t in result.runs["task"].unique() if (e := result.ablation.tasks[t]).gate is None and e.target is None
    )
    if not tasks:
        return []
    return [
        f"Not checked: whether the runs learned {', '.join(f'`{t}`' for t in tasks)}, which declare neither a gate "
        "nor a convergence target (`gate:` / `target:` of the task, docs/ablation-files.md); a baseline that "
        "never learned the task would be compared as if it had.",
        "",
    ]


def _gate_reason(result: Analysis, run: pd.Series) -> str:
    gate = result.ablation.tasks[run["task"]].gate
    value = next(x for x in result.scan.records if x.run_id == run["run_id"]).metric(gate.metric)
    nan = " (undefined: NaN)" if value is not None and math.isnan(value) else ""
    said = f"`{gate.metric}` = {'– (not recorded)' if value is None else text(value) + nan}"
    if not result.ablation.profiles[result.profile].apply_gate:
        return (
            f"{said}, below the gate {gate.describe()}; the gate is not applied in this profile, so the run "
            "stays in every comparison"
        )
    return f"did not learn the task at L: {said}, gate {gate.describe()}; left out of the comparisons beyond L"
