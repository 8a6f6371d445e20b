"""The ``causality`` and ``prefix`` contracts, for any :class:`~harness.modules.TransformerLM`.

A component's check builds one around it; tests build one per combination of components.
"""

from __future__ import annotations

import torch
from torch import Tensor

from harness.contracts.result import ContractFailed, Passed
from harness.modules import TransformerLM

PREFIX_RTOL = 1e-4  # matrices of other shapes round otherwise (in float32, by about 1e-7)
MODES = ("train", "eval")
"""How a run calls a model: ``train``, a training step (training mode, gradients on); ``eval``, a
validation or test pass (eval mode, under ``torch.inference_mode`` as Lightning runs them)."""


def tokens(n: int, t: int, seed: int, vocab: int) -> Tensor:
    """Random token ids (n, t) long in [0, ``vocab``), drawn from a generator of their own seeded with ``seed``."""
    return torch.randint(0, vocab, (n, t), generator=torch.Generator().manual_seed(seed))


def causality(
    model: TransformerLM,
    length: int,
    seed: int = 0,
    key_padding_mask: Tensor | None = None,
    starts: Tensor | None = None,
    mode: str = "eval",
) -> Passed:
    """Changing the tokens from position s on never changes the outputs before s, for every s in ``starts``.

    Exactly: the same batch row of two calls computes the same prefix. ``starts``: (B,) long, one row each (None:
    every s in 1 .. T-1), T = ``length``; called in ``mode`` (:data:`MODES`); ``key_padding_mask`` (1, T) bool, True
    at padding, whose outputs are not compared.

    Raises:
        ContractFailed: with the first offending position, the first changed token that reaches
            it, and the largest change; also when the outputs are not finite or never change at all (causality
            cannot be checked then).
    """
    vocab = model.cfg.vocab_size
    base = tokens(1, length, seed, vocab)[0]  # (T,)
    gen = torch.Generator().manual_seed(seed + 1)
    starts = torch.arange(1, length) if starts is None else starts  # (B,)
    rows = base.repeat(len(starts), 1)  # (B, T): row i changes the tokens from starts[i] on
    for i, s in enumerate(starts.tolist()):
        rows[i, s:] = torch.randint(0, vocab, (length - s,), generator=gen)
        rows[i, s] = (base[s] + torch.randint(1, vocab, (1,), generator=gen)) % vocab  # surely another token
    pad = None if key_padding_mask is None else key_padding_mask.expand(len(starts), length)
    same, changed = forward(model, base.repeat(len(starts), 1), pad, mode, seed), forward(model, rows, pad, mode, seed)
    real = torch.ones(length, dtype=torch.bool) if key_padding_mask is None else ~key_padding_mask[0]  # (T,)
    nonfinite = ~torch.isfinite(same).all(-1) & real  # (B, T)
    if nonfinite.any():
        raise ContractFailed(f"outputs not finite at position {int(nonfinite.any(0).nonzero()[0])}: cannot check")
    diff = (same - changed).abs().amax(-1)  # (B, T)
    before = (torch.arange(length)[None, :] < starts[:, None]) & real  # (B, T)
    leaks = before & ~(diff == 0)  # NaN in a changed row counts as a change
    if leaks.any():
        p = int(leaks.any(0).nonzero()[0])
        s = int(starts[leaks[:, p]].min())
        raise ContractFailed(
            f"first offending position {p}: its output changes when the tokens from position {s} on change "
            f"(|change| up to {diff[leaks].max().item():.3g}; {int(leaks.any(0).sum())} of "
            f"{int(real.sum())} positions leak)"
        )
    if not (diff[~before & real[None, :]] > 0).any():
        raise ContractFailed("the outputs never change when the tokens change: causality cannot be seen")
    return f"no output up to t changes with the tokens after t, for t = 0 .. {length - 2}"


def forward(model: TransformerLM, idx: Tensor, pad: Tensor | None, mode: str, seed: int) -> Tensor:
    """Logits (B, T, V) of ``idx`` (B, T) as a run computes them in ``mode`` (:data:`MODES`).

    The global generator is seeded from ``seed`` (restored afterwards): two calls draw the same dropout. ``pad``:
    (B, T) bool, True at padding, or None.
    """
    model.train(mode == "train")
    grad = torch.enable_grad() if mode == "train" else torch.inference_mode()
    with torch.random.fork_rng(devices=[]), grad:
        torch.manual_seed(seed)
        out = model(idx, pad)
    return out.detach().clone()  # (B, T, V), usable outside inference mode


def prefix(model: TransformerLM, length: int, seed: int = 0) -> Passed:
    """The outputs at the first ``length // 2`` positions are the same whether the sequence ends there or runs on.

    The same to :data:`PREFIX_RTOL`, the sequence running on to ``length``.

    Raises:
        ContractFailed: naming the first position whose output changes.
    """
    base = tokens(1, length, seed, model.cfg.vocab_size)  # (1, T)
    half = length // 2
    with torch.no_grad():
        short, full = model(base[:, :half])[0], model(base)[0, :half]  # (T/2, V) each
    gap = (short - full).abs().amax(-1)  # (T/2,)
    tol = PREFIX_RTOL * max(1.0, full.abs().max().item())
    if not (gap <= tol).all():  # NaN is a change
        p = int((~(gap <= tol)).nonzero()[0])
        raise ContractFailed(
            f"first offending position {p}: its output changes when the sequence is extended from {half} "
            f"to {length} tokens (|change| {gap[p].item():.3g} > {tol:.2g}): an output depends on the length"
        )
    return f"the outputs of the first {half} positions do not change when the sequence grows to {length}"
