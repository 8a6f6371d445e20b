"""The sums a validation or test pass keeps per batch, and the metrics made from them.

Loss (nats/token), accuracy and exact match on synthetic tasks' answer positions, perplexity and bits
per byte for language modelling. Torch only. A pass with non-finite logits at a scored position
has no metric (argmax of NaN logits is a valid-looking token: accuracy would read 0 as if
measured): every metric of that length is NaN, and :func:`undefined_reason` says why (the record's
``undefined_metrics``).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from harness.tasks import IGNORE_INDEX


def score(logits: torch.Tensor, targets: torch.Tensor, token_bytes: torch.Tensor | None = None) -> dict[str, float]:
    """Sums over the scored positions of ``logits`` (B, T, V) for ``targets`` (B, T).

    ``targets`` holds IGNORE_INDEX where no loss is taken. The sums: ``loss_sum`` (nats),
    ``tokens``, ``correct``, ``seqs`` (rows with a scored position), ``exact`` (rows whose every
    scored position is right); with ``token_bytes`` ((V,) UTF-8 bytes per token id), ``bytes`` of
    the scored targets; where scored logits are not finite, ``nonfinite`` (how many) and
    ``first_nonfinite`` (the lowest such position).
    """
    mask = targets != IGNORE_INDEX  # (B, T)
    bad = ~torch.isfinite(logits).all(-1) & mask  # (B, T): scored positions with a NaN or inf logit
    loss = F.cross_entropy(logits.float().flatten(0, 1), targets.flatten(), ignore_index=IGNORE_INDEX, reduction="sum")
    hit = (logits.argmax(-1) == targets) & mask  # (B, T)
    has = mask.any(-1)  # (B,)
    exact = (hit | ~mask).all(-1) & has
    out = {
        "loss_sum": loss.item(),
        "tokens": mask.sum().item(),
        "correct": hit.sum().item(),
        "seqs": has.sum().item(),
        "exact": exact.sum().item(),
    }
    if token_bytes is not None:  # bits per byte (the text task)
        out["bytes"] = token_bytes.to(targets.device)[targets[mask]].sum().item()
    if bad.any():
        out["nonfinite"] = bad.sum().item()
        out["first_nonfinite"] = bad.any(0).nonzero()[0].item()
    return out


def summarise(sums: dict[str, float], kind: str, suffix: str) -> dict[str, float]:
    """Metrics from summed counts, each name ending in ``suffix``.

    ``loss`` (nats/token); ``acc``/``exact`` for synthetic tasks (answer positions only); ``ppl`` =
    exp(loss) for language modelling (``kind`` ``lm``); ``bpb`` (bits per byte:
    ``loss_sum / (bytes x ln 2)``) when the sums hold bytes. All NaN at non-finite logits.
    """
    loss = sums["loss_sum"] / max(sums["tokens"], 1)
    out = {f"loss{suffix}": loss}
    if kind == "lm":
        out[f"ppl{suffix}"] = math.exp(min(loss, 50.0))
    else:
        out[f"acc{suffix}"] = sums["correct"] / max(sums["tokens"], 1)
        out[f"exact{suffix}"] = sums["exact"] / max(sums["seqs"], 1)
    if sums.get("bytes"):  # bits per byte (the text task)
        out[f"bpb{suffix}"] = sums["loss_sum"] / (sums["bytes"] * math.log(2))
    if sums.get("nonfinite"):
        return dict.fromkeys(out, math.nan)
    return out


def undefined_reason(sums: dict[str, float], length: int) -> str | None:
    """Why :func:`summarise` gives no metric for a pass at ``length`` tokens, or None when it does.

    E.g. ``non-finite logits at 2,048 of 4,096 scored positions at T=128 (first at position 100)``.
    """
    if not sums.get("nonfinite"):
        return None
    return (
        f"non-finite logits at {int(sums['nonfinite']):,} of {int(sums['tokens']):,} scored positions at "
        f"T={length} (first at position {int(sums['first_nonfinite'])})"
    )


def add_sums(acc: dict[str, float], new: dict[str, float]) -> None:
    """Add one batch's sums (:func:`score`) to ``acc`` in place (``first_nonfinite``: the lowest)."""
    for k, v in new.items():
        acc[k] = min(acc.get(k, v), v) if k == "first_nonfinite" else acc.get(k, 0.0) + v


GAP_NATS = 1.0
"""How far (nats/token) the final training loss may fall below the held-out loss at L before a run
is flagged (:func:`train_gap_flag`): a factor e in perplexity, more than twice the largest gap of
any run in the committed reports' data files (0.41 nats: copy in pe_extrapolation, cpu profile;
at most 0.21 on tinyshakespeare; a run that reads the next token in training mode only trains to
0.87 and tests at 4.47)."""


def fresh_draws(kind: str, train_tokens: int, train_split: int | None) -> bool:
    """Whether every training batch is a fresh draw of the distribution the held-out set is drawn from.

    Always for a synthetic task (each batch generated anew), and for an lm task while the run has
    trained on no more tokens (``train_tokens``: ``steps x batch x L``) than its train split holds
    (``train_split``, None: unbounded), so that memorising the split cannot lower the training loss.
    """
    return kind == "synthetic" or train_split is None or train_tokens <= train_split


def train_gap_flag(train_loss: float, held_out: float, fresh: bool) -> str | None:
    """The flag of a run whose final training loss is more than :data:`GAP_NATS` below its held-out loss, or None.

    ``train_loss``: the final training loss (``train_loss_final``, nats/token); ``held_out``: the
    held-out loss at L (``loss@x1``). A run is flagged only where that gap cannot happen honestly.
    Where batches are ``fresh`` draws (:func:`fresh_draws`), the last training loss is itself a
    held-out estimate for (one step earlier) the same weights; far below it, the model sees in
    training what it does not in evaluation: a component that leaks the next token in training mode
    only (``ablate check``'s ``causality in use`` catches one).
    """
    if not fresh or not held_out - train_loss > GAP_NATS:  # NaN: no flag (the metric says why)
        return None
    return (
        f"training loss {train_loss:.3g} is {held_out - train_loss:.3g} nats below the held-out loss {held_out:.3g} "
        f"at L (more than {GAP_NATS:g}) although every training batch is a fresh draw of the held-out "
        "distribution: the model sees in training what it does not see in evaluation (a component that "
        "leaks only in training mode?); run ablate check on its components"
    )
