"""The per-cell probe table of a report, for runs that carry the ``leakage`` / ``masked_attention``
probes (:mod:`harness.training.probes`, e.g. ``mask_fill_fp16``): per variant, how its runs ended and
what the probes measured at initialisation and after training. Read from every record whatever its
status: a run that raised or diverged still stored the probes it measured at initialisation.
"""

from __future__ import annotations

import math

from harness.analysis.comparisons import Analysis
from harness.analysis.outcomes import why_not_finished
from harness.encode import text
from harness.store.record import Record

PROBE_KEYS = ("leak_logits", "attn_masked_max")


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
    records = [
        r
        for r in result.scan.records
        if any(
            r.metric(f"{k}_init") is not None or r.metric(f"{k.split('_')[0]}_raised_init") is not None
            for k in PROBE_KEYS
        )
    ]
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
        lines += [
            f"**{task}**",
            "",
            "| cell | finished | how the others ended | probe raised | leak into real positions: logits | "
            "leak into real positions: gradient | leak into padding rows: logits | NaN/inf logits (fraction) | "
            "max attention on a masked key | attention rows with NaN/inf (fraction) | steps with NaN/inf gradients "
            f"(mean of finished) | `{abl.tasks[task].primary.metric}` (mean of finished) |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for v in abl.variants():
            label = abl.label(v)
            recs = [r for r in recs_t if r.variant_label == label]
            if not recs:
                continue
            ok = [r for r in recs if r.status == "ok"]
            name = f"{label} (baseline)" if label == abl.baseline_label else label
            ended = "; ".join(
                f"{n} {why}" for why, n in why_not_finished([r.status for r in recs], [r.reason for r in recs])
            )
            raised = sum(
                any(r.metric(f"{p}_raised{s}") == 1 for p in ("leak", "attn") for s in ("_init", "")) for r in recs
            )
            lines.append(
                f"| {name} | {len(ok)}/{len(recs)} | {ended or '–'} | {raised}/{len(recs)} | "
                f"{_pair(recs, 'leak_logits_real')} | {_pair(recs, 'leak_grad_real')} | {_pair(recs, 'leak_logits')} | "
                f"{_pair(recs, 'nonfinite_logits')} | {_pair(recs, 'attn_masked_max')} | "
                f"{_pair(recs, 'attn_nonfinite_rows')} | {_mean(ok, 'nonfinite_grad_steps')} | "
                f"{_mean(ok, abl.tasks[task].primary.metric)} |"
            )
        lines.append("")
    return lines
