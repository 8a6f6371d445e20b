"""Measurements of a model that are not its loss, as plain floats (NaN where the model produced NaN/inf).

Causal leakage, attention on masked keys, and gradient norms per layer. The caller picks the precision (autocast);
none changes the model's parameters or leaves gradients behind.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from harness.modules.kernels import hidden_keys
from harness.modules.transformer import TransformerLM


def _finite_max(x: Tensor) -> float:
    """Largest finite entry of ``x``, 0.0 if none is finite."""
    x = x.detach().float()
    finite = x[torch.isfinite(x)]
    return finite.max().item() if finite.numel() else 0.0


def causal_leakage(
    model: TransformerLM, idx: Tensor, t: int, key_padding_mask: Tensor | None = None, seed: int = 0
) -> dict[str, float]:
    """Does anything after position ``t`` reach the logits at positions ``<= t``?

    Replaces the tokens after ``t`` with random ones and compares, then back-propagates a random projection of the
    logits at ``<= t`` to the input embeddings: a correct causal mask gives exactly 0 for both.

    Args:
        model: The model, in the mode it is measured in (eval).
        idx: (B, T) token ids, with ``t < T - 1``.
        t: The last position whose logits are compared.
        key_padding_mask: (B, T) bool, True at padding.
        seed: For the tokens and the projection.

    Returns:
        ``leak_logits`` (largest finite |change| of logits at ``<= t``), ``leak_grad`` (largest
        finite |d logits[<= t] / d embedding[> t]|), ``nonfinite_logits`` and ``nonfinite_grad``
        (fractions that are NaN/inf); with a padding mask also ``leak_logits_real`` and
        ``leak_grad_real`` at the positions ``<= t`` that are not padding (a finite mask fill leaks
        into padding rows, never into real positions).
    """
    gen = torch.Generator().manual_seed(seed)
    other = idx.clone()
    other[:, t + 1 :] = torch.randint(0, model.cfg.vocab_size, (idx.size(0), idx.size(1) - t - 1), generator=gen)
    w = torch.randn((idx.size(0), t + 1, model.cfg.vocab_size), generator=gen).to(idx.device)
    a, grad = _logits_and_grad(model, idx, key_padding_mask, t, w)  # (B, t + 1, V), (B, T, C)
    with torch.no_grad():
        b = model(other, key_padding_mask)[:, : t + 1]
    diff = (a.float() - b.float()).abs()  # (B, t + 1, V)
    out = {
        "leak_logits": _finite_max(diff),
        "leak_grad": _finite_max(grad[:, t + 1 :].abs()),
        "nonfinite_logits": (~torch.isfinite(a)).float().mean().item(),
        "nonfinite_grad": (~torch.isfinite(grad)).float().mean().item(),
    }
    if key_padding_mask is not None:  # the same, at the real (non-padding) positions <= t only
        real = ~key_padding_mask[:, : t + 1]  # (B, t + 1)
        out["leak_logits_real"] = _finite_max(diff[real])
        grad = _logits_and_grad(model, idx, key_padding_mask, t, w * real[..., None].to(w.dtype))[1]
        out["leak_grad_real"] = _finite_max(grad[:, t + 1 :].abs())
    return out


def _logits_and_grad(
    model: TransformerLM, idx: Tensor, mask: Tensor | None, t: int, w: Tensor
) -> tuple[Tensor, Tensor]:
    """The logits at ``<= t`` and the gradient of ``sum(logits * w)`` at the token embeddings."""
    emb: list[Tensor] = []
    handle = model.tok_emb.register_forward_hook(lambda _m, _i, out: emb.append(out))
    try:
        with torch.enable_grad():
            a = model(idx, mask)[:, : t + 1]  # (B, t + 1, V)
            (grad,) = torch.autograd.grad((a.float() * w).sum(), emb[0])  # (B, T, C)
    finally:
        handle.remove()
    return a.detach(), grad


def masked_attention(model: TransformerLM, idx: Tensor, key_padding_mask: Tensor | None = None) -> dict[str, float]:
    """Attention probability on keys a query must not see (future or padding), every layer.

    NaN without a kernel that returns weights (``math``).

    Returns:
        ``attn_masked_max``: the largest probability on a hidden key, over rows with a visible
        key (0 for an exact mask); ``attn_fully_masked_rows``: fraction of rows with none;
        ``attn_fully_masked_mass``: mean mass on hidden keys in those rows (NaN if none);
        ``attn_nonfinite_rows``: fraction of rows whose weights hold NaN/inf.
    """
    kernels = [block.attn.kernel for block in model.blocks]
    nan = float("nan")
    if not all(k.returns_weights for k in kernels):
        return dict.fromkeys(
            ("attn_masked_max", "attn_fully_masked_rows", "attn_fully_masked_mass", "attn_nonfinite_rows"), nan
        )
    weights: list[Tensor] = []
    hooks = [k.register_forward_hook(lambda m, i, out: weights.append(out[1])) for k in kernels]
    pre = [k.register_forward_pre_hook(lambda m, args: (*args[:4], True, *args[5:])) for k in kernels]
    try:
        with torch.no_grad():
            model(idx, key_padding_mask)
    finally:
        for h in hooks + pre:
            h.remove()
    w = torch.stack([x.float() for x in weights])  # (L, B, H, T, S)
    T = idx.size(1)
    hidden = hidden_keys(T, T, key_padding_mask, idx.device).expand(w.shape[1:])  # (B, H, T, S)
    full = hidden.all(-1).expand(w.shape[:-1])  # (L, B, H, T)
    on_hidden = w.masked_fill(~hidden, 0.0)  # (L, B, H, T, S)
    nonfinite = ~torch.isfinite(w).all(-1)  # (L, B, H, T)
    mass = on_hidden.sum(-1)[full & ~nonfinite]
    return {
        "attn_masked_max": _finite_max(on_hidden.amax(-1)[~full]),
        "attn_fully_masked_rows": full.float().mean().item(),
        "attn_fully_masked_mass": mass.mean().item() if mass.numel() else nan,
        "attn_nonfinite_rows": nonfinite.float().mean().item(),
    }


@dataclass(frozen=True)
class InitGradients:
    """Gradient norms per block at one batch, bottom block first, and the residual stream's growth.

    Attributes:
        block: L2 norm of the loss gradient over every parameter of block i, its norms included
            (the last Post-LN block's ``norm2`` is the final norm; Pre-LN's is in no block).
        ffn_out: L2 norm of the loss gradient of block i's ``ffn.fc_out`` weight (W^(2) of Xiong
            et al., 2020: their Fig. 3 and Theorem 1), the same parameter in either norm position.
        stream_growth: |x_L| / |x_0|, the Frobenius norm of the residual stream after the last
            block over that of the embeddings.
    """

    block: list[float]
    ffn_out: list[float]
    stream_growth: float


def _norm(grads: list[Tensor | None]) -> float:
    g = [x.float().norm() for x in grads if x is not None]
    return torch.linalg.vector_norm(torch.stack(g)).item() if g else 0.0


def init_gradients(
    model: TransformerLM, idx: Tensor, targets: Tensor, ignore_index: int = -100, key_padding_mask: Tensor | None = None
) -> InitGradients:
    """The per-block gradient norms and the residual stream's growth of ``model`` on one batch.

    ``.grad`` is left untouched. At initialisation these are the quantities Xiong et al. (ICML 2020) analyse: in
    Post-LN the gradient of the FFN weights grows toward the last block (Fig. 3) and the last block's does not shrink
    with depth (Theorem 1); in Pre-LN it is flat across blocks and the last block's shrinks as the stream grows with
    depth.

    Args:
        model: The model measured.
        idx: (B, T) token ids.
        targets: (B, T) next-token targets.
        ignore_index: The target where no loss is taken.
        key_padding_mask: (B, T) bool, True at padding.

    Returns:
        The norms and the growth, as :class:`InitGradients`.
    """
    ends: list[Tensor] = []
    first = model.blocks[0].register_forward_pre_hook(lambda _m, args: ends.append(args[0].detach()))
    last = model.blocks[-1].register_forward_hook(lambda _m, _a, out: ends.append(out.detach()))
    try:
        with torch.enable_grad():
            logits = model(idx, key_padding_mask)  # (B, T, V)
            loss = F.cross_entropy(logits.float().flatten(0, 1), targets.flatten(), ignore_index=ignore_index)
            params = [list(block.parameters()) for block in model.blocks]
            grads = torch.autograd.grad(loss, [p for ps in params for p in ps], allow_unused=True)
    finally:
        first.remove()
        last.remove()
    found = dict(zip(map(id, (p for ps in params for p in ps)), grads))
    x0, xl = (x.float() for x in ends[:2])  # (B, T, C) each
    return InitGradients(
        block=[_norm([found[id(p)] for p in ps]) for ps in params],
        ffn_out=[_norm([found[id(block.ffn.fc_out.weight)]]) for block in model.blocks],
        stream_growth=(xl.norm() / x0.norm()).item(),
    )
