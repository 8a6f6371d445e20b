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

import statistics
import time
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F

from harness.contracts.result import Passed
from harness.modules import POSITIONAL, TransformerConfig, TransformerLM

LENGTHS = (64, 256, 1024)
REPEATS = 3
BUDGET_MS = 500.0  # a math kernel at T = 1024 takes about 0.8 s a call on two loaded cores


@dataclass(frozen=True)
class Cost:
    """One model at one length: ``ms`` median over ``calls`` timed calls, ``mib`` saved for
    backward; ``refused``: why the model declares it cannot run at this length (then no numbers)."""

    seq_len: int
    ms: float | None = None
    mib: float | None = None
    refused: str | None = None
    calls: int = 0

    def text(self) -> str:
        return f"refused ({self.refused})" if self.refused else f"{self.ms:.3g} ms {self.mib:.3g} MiB"


def model_cost(model: TransformerLM, seq_len: int, seed: int = 0) -> Cost:
    """Forward + backward of ``model`` on a (1, ``seq_len``) batch; see the module docstring."""
    limit = POSITIONAL.get(model.cfg.position).max_positions(model.cfg)
    if limit is not None and limit < seq_len:
        return Cost(seq_len, refused=f"max_positions {limit}")
    gen = torch.Generator().manual_seed(seed)
    idx = torch.randint(0, model.cfg.vocab_size, (1, seq_len), generator=gen)  # (1, T)
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    saved: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in params:
            saved[storage.data_ptr()] = storage.nbytes()
        return t

    def step(count: bool = False) -> None:
        if count:
            with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                logits = model(idx)  # (1, T, V)
        else:
            logits = model(idx)
        F.cross_entropy(logits.float().flatten(0, 1), idx.flatten()).backward()
        model.zero_grad(set_to_none=True)

    step(count=True)
    times: list[float] = []
    while len(times) < REPEATS and sum(times) < BUDGET_MS:
        start = time.perf_counter()
        step()
        times.append((time.perf_counter() - start) * 1e3)
    return Cost(seq_len, statistics.median(times), sum(saved.values()) / 2**20, calls=len(times))


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
        parts.append(f"T={c.seq_len} {c.text()}" + (f" ({default_name} {d.text()})" if d else ""))
        row = {"seq_len": c.seq_len, "ms": c.ms, "calls": c.calls, "mib_saved": c.mib, "refused": c.refused}
        rows.append(row | ({"default_ms": d.ms, "default_mib_saved": d.mib} if d else {}))
    tail = "" if default else " (this is the default)"
    detail = "forward + backward, MiB saved for backward: " + "; ".join(parts) + tail
    return detail, {"threads": torch.get_num_threads(), "rows": rows}
