"""Harness overhead: one `ablate` run against a bare PyTorch loop doing the same work.

Same model (the pure-torch TransformerLM at the `cpu` profile's size for `copy` in
pe_extrapolation: d_model 64, 4 heads, 3 layers), same data (the task's seeded batches), same
steps, AdamW, schedule and clipping, the same validation passes every `train.val_every` steps
and the same test evaluation at every length; one torch thread each. Target: ratio <= 1.05.

Usage: python benchmarks/overhead.py [--steps 1000] [--repeat 2]
(`--steps 3000` is the cpu profile's own length for copy.) Prints the wall times, the ratio,
and where the harness's extra time goes.
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from harness.execution.attempt import execute
from harness.experiment.ablation import load
from harness.experiment.grid import plan, transformer_config
from harness.modules import TransformerLM
from harness.seeding import numpy_rng, stream_seed
from harness.training.loop import lr_factor
from tasks import IGNORE_INDEX, build_task


def _loss(model: TransformerLM, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(model(x).float().flatten(0, 1), y.flatten(), ignore_index=IGNORE_INDEX)


@torch.no_grad()
def _evaluate(model: TransformerLM, task, n: int, length: int, batch: int, rng) -> float:
    x, y = task.sample(n, length, rng, "test")
    model.eval()
    total = sum(_loss(model, x[i : i + batch], y[i : i + batch]).item() for i in range(0, n, batch))
    model.train()
    return total


def bare(spec, task) -> dict[str, float]:
    """The same training and evaluation as a plain loop: no Lightning, no loggers, no store."""
    cfg, t = spec.config, spec.config.train
    t0 = time.perf_counter()
    torch.manual_seed(stream_seed(spec.seed, "init"))
    model = TransformerLM(transformer_config(cfg, task.vocab_size))
    opt = torch.optim.AdamW(model.parameter_groups(t.weight_decay), lr=t.lr, betas=(0.9, 0.95))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, t.warmup_steps, t.steps, t.min_lr_ratio))
    rng, t1 = numpy_rng(spec.seed, "data"), time.perf_counter()
    for step in range(t.steps):
        x, y = task.sample(t.batch_size, t.seq_len, rng, "train")
        loss = _loss(model, x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), t.grad_clip)
        opt.step()
        sched.step()
        if not math.isfinite(loss.item()):
            raise RuntimeError("diverged")
        if (step + 1) % t.val_every == 0:
            _evaluate(model, task, cfg.eval.val_examples, t.seq_len, cfg.eval.batch_size, numpy_rng(spec.seed, "val"))
    t2 = time.perf_counter()
    for mult, length in zip(cfg.eval.length_multipliers, cfg.eval_lengths()):
        batch = max(1, cfg.eval.batch_size * t.seq_len // length)
        _evaluate(model, task, cfg.eval.n_examples, length, batch, numpy_rng(spec.seed, "test", mult))
    t3 = time.perf_counter()
    return {"wall": t3 - t0, "train": t2 - t1, "test": t3 - t2}


def harness(spec, abl) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        rec = execute(spec, Path(tmp), abl=abl)
        wall = time.perf_counter() - t0
    assert rec["status"] == "ok", rec.get("reason")
    return {"wall": wall, "train": rec["fit_s"], "test": rec["test_s"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(1)
    abl = load("pe_extrapolation")
    data = os.environ.get("ABLATE_DATA_DIR")
    _, specs = plan(abl, "cpu", [f"train.steps={args.steps}"], Path(data) if data else None)
    spec = next(s for s in specs if s.task == "copy" and s.variant_label == "sinusoidal" and s.seed == 0)
    task = build_task(spec.task, spec.task_params)
    m, t = spec.config.model, spec.config.train
    print(
        f"copy, sinusoidal, seed 0: d_model {m.d_model}, {m.n_heads} heads, {m.n_layers} layers, "
        f"{t.steps} steps x batch {t.batch_size} at L={t.seq_len}, validation every {t.val_every}, 1 thread"
    )
    harness(spec, abl)  # warm-up: imports, first Trainer, allocator
    runs = {"bare": [], "ablate": []}
    for _ in range(args.repeat):
        runs["bare"].append(bare(spec, task))
        runs["ablate"].append(harness(spec, abl))
    b = min(runs["bare"], key=lambda r: r["wall"])
    h = min(runs["ablate"], key=lambda r: r["wall"])
    print(f"bare loop : {b['wall']:7.2f} s  (train {b['train']:.2f} s, test {b['test']:.2f} s)")
    print(f"ablate run: {h['wall']:7.2f} s  (train {h['train']:.2f} s, test {h['test']:.2f} s)")
    print(f"ratio (ablate / bare), whole run: {h['wall'] / b['wall']:.3f}   target <= 1.05")
    print(f"ratio, training phase only:       {h['train'] / b['train']:.3f}")
    fixed = h["wall"] - h["train"] - h["test"]
    print(
        f"outside fit/test (Trainer, loggers, record, claim, checkpoints' cleanup): {fixed:.2f} s; "
        f"per step in fit: {1e3 * (h['train'] - b['train']) / t.steps:+.2f} ms "
        f"(Lightning's loop, logging, {t.steps // t.val_every} checkpoints)"
    )


if __name__ == "__main__":
    main()
