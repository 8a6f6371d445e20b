"""The ``time and memory`` contract: one forward + backward of a small model at a few lengths, for
the component under test and its family's default side by side.

Time: the median wall time of up to :data:`REPEATS` calls (fewer once they took :data:`BUDGET_MS`)
after one untimed call, each a forward of a (1, T) batch and a backward of its loss, in the
calling thread(s). Memory: the MiB of tensors the forward saves for the backward (unique storages
but the parameters, counted by ``saved_tensors_hooks``): exact on any device, unlike a process's
peak RSS, and what grows with T (a ``math`` kernel saves its (B, H, T, T) weights, a fused kernel
does not); it misses buffers freed within the forward.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from dataclasses import replace
from typing import Any

import torch
import torch.nn.functional as F

from harness.contracts.result import Passed
from harness.modules import POSITIONAL, TransformerConfig, TransformerLM

LENGTHS = (64, 256, 1024)
REPEATS = 3
BUDGET_MS = 500.0  # a math kernel at T = 1024 takes about 0.8 s a call on two loaded cores


def model_cost(model: TransformerLM, seq_len: int, seed: int = 0) -> dict[str, Any]:
    """Forward + backward of ``model`` on a (1, ``seq_len``) batch (see the module docstring): a row
    of ``time and memory``, ``ms`` the median over ``calls`` timed calls, ``mib_saved`` saved for
    backward; ``refused``: why the model declares it cannot run at this length (then no numbers)."""
    row: dict[str, Any] = {"seq_len": seq_len, "ms": None, "calls": 0, "mib_saved": None, "refused": None}
    limit = POSITIONAL.get(model.cfg.position).max_positions(model.cfg)
    if limit is not None and limit < seq_len:
        return row | {"refused": f"max_positions {limit}"}
    gen = torch.Generator().manual_seed(seed)
    idx = torch.randint(0, model.cfg.vocab_size, (1, seq_len), generator=gen)  # (1, T)
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    saved: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in params:
            saved[storage.data_ptr()] = storage.nbytes()
        return t

    def step(hooks: Any = None) -> None:
        with hooks or contextlib.nullcontext():
            logits = model(idx)  # (1, T, V)
        F.cross_entropy(logits.float().flatten(0, 1), idx.flatten()).backward()
        model.zero_grad(set_to_none=True)

    step(torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t))
    times: list[float] = []
    while len(times) < REPEATS and sum(times) < BUDGET_MS:
        start = time.perf_counter()
        step()
        times.append((time.perf_counter() - start) * 1e3)
    return row | {"ms": statistics.median(times), "calls": len(times), "mib_saved": sum(saved.values()) / 2**20}


def _text(c: dict[str, Any]) -> str:
    return f"refused ({c['refused']})" if c["refused"] else f"{c['ms']:.3g} ms {c['mib_saved']:.3g} MiB"


def time_and_memory(
    cfg: TransformerConfig, default: TransformerConfig | None, default_name: str, lengths: tuple[int, ...], seed: int
) -> Passed:
    """:func:`model_cost` at every length for ``cfg`` and (unless None) ``default``, each model
    built once with ``max_len`` covering the longest length (a learned table must hold it)."""
    costs = []
    for c in (cfg, default) if default else (cfg,):
        torch.manual_seed(seed)
        model = TransformerLM(c if c.max_len is None else replace(c, max_len=max(c.max_len, *lengths))).train()
        costs.append([model_cost(model, t, seed) for t in lengths])
    parts, rows = [], []
    for c, d in zip(costs[0], costs[1] if default else [None] * len(lengths), strict=True):
        parts.append(f"T={c['seq_len']} {_text(c)}" + (f" ({default_name} {_text(d)})" if d else ""))
        rows.append(c | ({"default_ms": d["ms"], "default_mib_saved": d["mib_saved"]} if d else {}))
    tail = "" if default else " (this is the default)"
    detail = "forward + backward, MiB saved for backward: " + "; ".join(parts) + tail
    return detail, {"threads": torch.get_num_threads(), "rows": rows}
