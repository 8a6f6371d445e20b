"""The per-cell probe table of a report: what each variant's runs measured beyond the loss.

For ablations whose runs carry the ``leakage`` / ``masked_attention`` probes (``eval.probes``;
:mod:`harness.training.probes`), e.g. ``mask_fill_fp16``: per variant, how many runs finished and how
the others ended (with the message, e.g. the float16 overflow ``masked_fill`` raises for -1e9),
whether a probe itself raised, the causal leakage (largest change of logits at positions <= t
when tokens after t change, and the largest gradient of those logits with respect to later
inputs: both exactly 0 for a correct mask), NaN/inf in logits, gradients and attention rows, and
the largest attention probability on a masked key, at initialisation and after training. Read
from every record of the analysis, whatever its status: a run that raised or diverged still
stored the probes it measured at initialisation.
"""

from __future__ import annotations

import math

from harness.analysis.comparisons import Analysis, why_not_finished
from harness.encode import text
from harness.store.record import Record

PROBE_KEYS = ("leak_logits", "attn_masked_max")


def _max(values: list[float]) -> float:
    finite = [v for v in values if v is not None and not math.isnan(v)]
    return max(finite) if finite else math.nan


def _fmt(x: float) -> str:
    return "0 (exact)" if x == 0 else text(x, ".3g")  # – when undefined, ∞ when infinite


def _pair(recs: list[Record], key: str) -> str:
    """``init / final`` maxima over runs of one probe metric."""
    init = _max([r.metric(f"{key}_init") for r in recs])
    final = _max([r.metric(key) for r in recs])
    return f"{_fmt(init)} / {_fmt(final)}"


def _ended(recs: list[Record]) -> str:
    reasons = why_not_finished([r.status for r in recs], [r.reason for r in recs])
    return "; ".join(f"{n} {why}" for why, n in reasons) or "–"


def _raised(recs: list[Record]) -> str:
    n = sum(1 for r in recs if any(r.metric(f"{p}_raised{s}") == 1 for p in ("leak", "attn") for s in ("_init", "")))
    return f"{n}/{len(recs)}"


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
            primary = abl.tasks[task].primary.metric
            vals = [r.metric(primary) for r in ok]
            vals = [x for x in vals if x is not None and not math.isnan(x)]
            mean = text(sum(vals) / len(vals)) if vals else "–"
            name = f"{label} (baseline)" if label == abl.baseline_label else label
            skipped = [r.metric("nonfinite_grad_steps") for r in ok]
            skipped = [x for x in skipped if x is not None and not math.isnan(x)]
            bad_steps = text(sum(skipped) / len(skipped)) if skipped else "–"
            lines.append(
                f"| {name} | {len(ok)}/{len(recs)} | {_ended(recs)} | {_raised(recs)} | "
                f"{_pair(recs, 'leak_logits_real')} | {_pair(recs, 'leak_grad_real')} | {_pair(recs, 'leak_logits')} | "
                f"{_pair(recs, 'nonfinite_logits')} | {_pair(recs, 'attn_masked_max')} | "
                f"{_pair(recs, 'attn_nonfinite_rows')} | {bad_steps} | {mean} |"
            )
        lines.append("")
    return lines
