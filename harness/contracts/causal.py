"""Causality of a whole model: the ``causality`` and ``prefix`` contracts, for any
:class:`~harness.modules.TransformerLM` (a component's check builds one around it; tests build one
per combination of components)."""

from __future__ import annotations

import torch
from torch import Tensor

from harness.contracts.result import ContractFailed, Outcome
from harness.modules import TransformerLM

PREFIX_RTOL = 1e-4
"""Relative tolerance of :func:`prefix`: a prefix computed at two lengths goes through matrices of
other shapes, which round otherwise (in float32, by about 1e-7)."""


def tokens(n: int, t: int, seed: int, vocab: int) -> Tensor:
    """(n, t) random token ids from their own generator."""
    return torch.randint(0, vocab, (n, t), generator=torch.Generator().manual_seed(seed))


def causality(model: TransformerLM, length: int, seed: int = 0, key_padding_mask: Tensor | None = None) -> Outcome:
    """Changing the tokens from position s on never changes the outputs before s, for every s in
    1 .. T-1: exactly, since the same batch row of two calls computes the same prefix.

    Args:
        model: in the mode it is to be checked in (eval).
        length: T, the length of the sequences.
        key_padding_mask: (1, T) bool, True at padding; outputs at padding positions are not compared.

    Raises:
        ContractFailed: with the first offending position (the lowest position whose output
            changes), the first changed token that reaches it, and the largest change.
    """
    vocab = model.cfg.vocab_size
    base = tokens(1, length, seed, vocab)[0]  # (T,)
    gen = torch.Generator().manual_seed(seed + 1)
    rows = base.repeat(length - 1, 1)  # (T-1, T): row i changes the tokens from s = i + 1 on
    for i, s in enumerate(range(1, length)):
        rows[i, s:] = torch.randint(0, vocab, (length - s,), generator=gen)
        rows[i, s] = (base[s] + torch.randint(1, vocab, (1,), generator=gen)) % vocab  # surely another token
    pad = None if key_padding_mask is None else key_padding_mask.expand(length - 1, length)
    with torch.no_grad():
        same, changed = model(base.repeat(length - 1, 1), pad), model(rows, pad)  # (T-1, T, V) each
    real = torch.ones(length, dtype=torch.bool) if key_padding_mask is None else ~key_padding_mask[0]  # (T,)
    nonfinite = ~torch.isfinite(same).all(-1) & real  # (T-1, T)
    if nonfinite.any():
        raise ContractFailed(f"outputs not finite at position {int(nonfinite.any(0).nonzero()[0])}: cannot check")
    diff = (same - changed).abs().amax(-1)  # (T-1, T)
    start = torch.arange(1, length)[:, None]  # (T-1, 1): first changed token of each row
    before = (torch.arange(length)[None, :] < start) & real  # (T-1, T)
    leaks = before & ~(diff == 0)  # NaN in a changed row counts as a change
    if leaks.any():
        p = int(leaks.any(0).nonzero()[0])
        s = int(leaks[:, p].nonzero()[0]) + 1
        raise ContractFailed(
            f"first offending position {p}: its output changes when the tokens from position {s} on change "
            f"(|change| up to {diff[leaks].max().item():.3g}; {int(leaks.any(0).sum())} of {int(real.sum())} positions leak)"
        )
    if not (diff[~before & real[None, :]] > 0).any():
        raise ContractFailed("the outputs never change when the tokens change: causality cannot be seen")
    return f"no output up to t changes with the tokens after t, for t = 0 .. {length - 2}"


def prefix(model: TransformerLM, length: int, seed: int = 0) -> Outcome:
    """The outputs at the first ``length // 2`` positions are the same whether the sequence ends
    there or runs on to ``length`` (to a relative ``PREFIX_RTOL``: other matrix shapes round
    otherwise): an output may depend on the tokens up to it, not on how many follow.

    Raises:
        ContractFailed: with the first position whose output changes.
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
