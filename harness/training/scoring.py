"""The sums a validation or test pass keeps per batch, and the metrics made from them: loss
(nats/token), accuracy and exact match on synthetic tasks' answer positions, perplexity and bits
per byte for language modelling. Torch only; no Lightning."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from harness.tasks import IGNORE_INDEX


def score(logits: torch.Tensor, targets: torch.Tensor, token_bytes: torch.Tensor | None = None) -> dict[str, float]:
    """Sums for loss and accuracy over scored positions (targets != IGNORE_INDEX).

    Args:
        logits: (B, T, V) float.
        targets: (B, T) long, IGNORE_INDEX where no loss is taken.
        token_bytes: (V,) long, UTF-8 bytes per token id (``Task.token_bytes``), or None.

    Returns:
        ``loss_sum`` (nats), ``tokens``, ``correct``, ``seqs`` (rows with a scored position) and
        ``exact`` (rows whose every scored position is right); with ``token_bytes``, ``bytes``:
        the bytes the scored targets stand for.
    """
    mask = targets != IGNORE_INDEX  # (B, T)
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
    return out


def summarise(sums: dict[str, float], kind: str, suffix: str) -> dict[str, float]:
    """Metrics from summed counts: ``loss`` (nats/token) always; ``acc``/``exact`` for synthetic
    tasks (answer positions only); ``ppl`` = exp(loss) for language modelling, and ``bpb`` (bits
    per byte: ``loss_sum / (bytes x ln 2)``, i.e. ``loss x tokens / (bytes x ln 2)``) when the
    sums hold the scored bytes."""
    loss = sums["loss_sum"] / max(sums["tokens"], 1)
    out = {f"loss{suffix}": loss}
    if kind == "lm":
        out[f"ppl{suffix}"] = math.exp(min(loss, 50.0))
    else:
        out[f"acc{suffix}"] = sums["correct"] / max(sums["tokens"], 1)
        out[f"exact{suffix}"] = sums["exact"] / max(sums["seqs"], 1)
    if sums.get("bytes"):  # bits per byte (the text task)
        out[f"bpb{suffix}"] = sums["loss_sum"] / (sums["bytes"] * math.log(2))
    return out


def add_sums(acc: dict[str, float], new: dict[str, float]) -> None:
    """Add the sums of one batch (:func:`score`) to ``acc``, in place."""
    for k, v in new.items():
        acc[k] = acc.get(k, 0.0) + v
