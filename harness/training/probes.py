"""Probe metrics of a run beyond its loss (``eval.probes``), on one batch of the validation distribution.

The batch has PROBE_ROWS rows at length L (its own sub-stream of the run seed, the same for every
variant); the probes run in the run's precision, with the task's padding mask. Torch only (the
run's Lightning precision plugin is passed in).

``grad_norm_init``: gradient norms per block at initialisation (Xiong et al., 2020;
:func:`harness.modules.probes.init_gradients`): of the FFN output weight W^(2), the parameter of
their Fig. 3 (``grad_norm_init_ffn_out_l<i>``, ``..._top_over_bottom``, the last block's
``grad_norm_init_ffn_out_top``); of every parameter of the block (``grad_norm_init_l<i>``,
``grad_norm_init_top_over_bottom``: Post-LN's last block holds the model's final norm, Pre-LN's is
in no block, so the two are not like for like); the residual stream's growth |x_L| / |x_0|
(``resid_growth_init``). ``leakage`` (:func:`~harness.modules.probes.causal_leakage`) and
``masked_attention`` (:func:`~harness.modules.probes.masked_attention`, kernel ``math`` only): at
init (``*_init``) and after training.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import TYPE_CHECKING

import torch

from harness.config import RunConfig
from harness.modules.probes import causal_leakage, init_gradients, masked_attention
from harness.modules.transformer import TransformerLM
from harness.seeding import numpy_rng
from harness.tasks import Task

if TYPE_CHECKING:
    from lightning.pytorch.plugins import Precision

PROBE_STREAM = 1000  # sub-stream of "val" for the probe batch: permanent
PROBE_ROWS = 16


def _guarded(name: str, fn: Callable[[], dict[str, float]]) -> dict[str, float]:
    """Run one probe; a ``RuntimeError`` it raises (float16 overflow of a -1e9 fill) is an outcome.

    That outcome is ``<name>_raised`` = 1 and the metric values absent.
    """
    try:
        return {**fn(), f"{name}_raised": 0.0}
    except RuntimeError:
        return {f"{name}_raised": 1.0}


def _last_over_first(norms: list[float]) -> float:
    return norms[-1] / norms[0] if norms[0] else float("nan")


def _grad_norms(net: TransformerLM, x: torch.Tensor, y: torch.Tensor, pad: torch.Tensor | None) -> dict[str, float]:
    got = init_gradients(net, x, y, key_padding_mask=pad)
    return {
        **{f"grad_norm_init_l{i}": n for i, n in enumerate(got.block)},
        "grad_norm_init_top_over_bottom": _last_over_first(got.block),
        **{f"grad_norm_init_ffn_out_l{i}": n for i, n in enumerate(got.ffn_out)},
        "grad_norm_init_ffn_out_top_over_bottom": _last_over_first(got.ffn_out),
        "grad_norm_init_ffn_out_top": got.ffn_out[-1],
        "resid_growth": got.stream_growth,  # measured at init only: resid_growth_init
    }


def measure(
    model: TransformerLM,
    cfg: RunConfig,
    task: Task,
    seed: int,
    precision: Precision,
    device: torch.device | str,
    when: str,
) -> dict[str, float]:
    """The probes ``cfg.eval.probes`` asks for (metric name -> value), at ``when``.

    They run in the forward context of the run's ``precision`` plugin. ``when`` = ``"init"`` (on a
    copy of the model, converted by that plugin, e.g. to float16 for ``16-true``; names end in
    ``_init``) or ``"final"`` (the trained model).
    """
    wanted = set(cfg.eval.probes)
    if not wanted or (when == "final" and not wanted - {"grad_norm_init"}):
        return {}
    net = precision.convert_module(copy.deepcopy(model).to(device)) if when == "init" else model
    was_training = net.training
    net.eval()
    x, y = task.sample(PROBE_ROWS, cfg.train.seq_len, numpy_rng(seed, "val", PROBE_STREAM), "val")
    x, y = x.to(device), y.to(device)
    pad = x == task.pad_id if task.pad_id is not None else None
    out: dict[str, float] = {}
    with precision.forward_context():
        if "grad_norm_init" in wanted and when == "init":
            out |= _guarded("grad_norm_init", lambda: _grad_norms(net, x, y, pad))
        if "leakage" in wanted:
            t = max(0, x.size(1) // 2 - 1)
            out |= _guarded("leak", lambda: causal_leakage(net, x, t, pad, seed=seed))
        if "masked_attention" in wanted:
            out |= _guarded("attn", lambda: masked_attention(net, x, pad))
    net.train(was_training)
    suffix = "_init" if when == "init" else ""
    return {f"{k}{suffix}" if not k.startswith("grad_norm_init") else k: float(v) for k, v in out.items()}
