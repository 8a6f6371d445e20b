"""Harness overhead: one `ablate` run against a bare PyTorch loop doing the same work.

Same model (the pure-torch TransformerLM at the `cpu` profile's size of pe_extrapolation: `copy`,
d_model 64, 4 heads, 3 layers, batch 32 at L 16; or `tinyshakespeare`, 2 layers at L 64), same
data (the task's seeded batches), same steps, AdamW, schedule and clipping, the same validation
passes every `train.val_every` steps and the same test evaluation at every length; one torch
thread each. Target: ratio <= 1.03. Bare and ablate runs alternate, `--repeat` pairs (15 by
default, at least 5: a median of 5 moved by 2.5 % between two runs of the same code on an idle VM,
docs/benchmarks.md); each pair gives a ratio, by wall time and by the process's CPU time (the
figure that other jobs on the cores disturb least), and the figure is the median over the pairs,
printed with their min and max, so that one lucky pair is never the figure.

A third run of each round, ``lightning``, puts the bare loop's step inside a minimal Lightning
``fit`` (manual optimisation, no loggers or callbacks): Lightning's own cost, the floor under any
Trainer-based run, so the figure splits into Lightning's loop and what ablate adds to it.

Also the cost of the progress display (harness/training/progress.py, harness/cli/run.py),
timed directly: a run writes progress.json every 2 s, and `ablate run` reads the folders of the
runs in flight every 2 s (in a thread of the training process with --workers 1). Target: < 1 %.

Usage: python benchmarks/overhead.py [--task copy|tinyshakespeare] [--steps 1000] [--repeat 15] [--json]
(`--steps 3000` is the cpu profile's own length for copy.)
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import statistics
import tempfile
import time
import warnings
from pathlib import Path
from types import SimpleNamespace

import torch
import torch.nn.functional as F

from harness.execution.attempt import execute
from harness.experiment.ablation import load
from harness.experiment.grid import plan
from harness.modules import TransformerLM
from harness.seeding import numpy_rng, stream_seed
from harness.tasks import IGNORE_INDEX, build_task
from harness.training.lit import lr_factor
from harness.training.model_and_devices import transformer_config

GOAL = 1.03
MIN_PAIRS = 5
PAIRS = 15
DISPLAY_GOAL = 0.01


def _loss(model: TransformerLM, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(model(x).float().flatten(0, 1), y.flatten(), ignore_index=IGNORE_INDEX)


@torch.no_grad()
def _evaluate(model: TransformerLM, task, n: int, length: int, batch: int, rng, split: str) -> float:
    x, y = task.sample(n, length, rng, split)
    model.eval()
    total = sum(_loss(model, x[i : i + batch], y[i : i + batch]).item() for i in range(0, n, batch))
    model.train()
    return total


def bare(spec, task) -> dict[str, float]:
    """The same training and evaluation as a plain loop: no Lightning, no loggers, no store."""
    cfg, t = spec.config, spec.config.train
    t0, c0 = time.perf_counter(), time.process_time()
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
            rng_val = numpy_rng(spec.seed, "val")
            _evaluate(model, task, cfg.eval.val_examples, t.seq_len, cfg.eval.batch_size, rng_val, "val")
    t2 = time.perf_counter()
    for mult, length in zip(cfg.eval.length_multipliers, cfg.eval_lengths()):
        batch = max(1, cfg.eval.batch_size * t.seq_len // length)
        _evaluate(model, task, cfg.eval.n_examples, length, batch, numpy_rng(spec.seed, "test", mult), "test")
    t3 = time.perf_counter()
    return {"wall": t3 - t0, "cpu": time.process_time() - c0, "train": t2 - t1, "test": t3 - t2}


def lightning(spec, task) -> dict[str, float]:
    """The bare loop's step inside a minimal Lightning ``fit`` (manual optimisation, as ablate's
    LitLM; no loggers, no callbacks, validation and test as the bare loop does them): what
    Lightning's own loop costs, the floor under any Trainer-based run."""
    import lightning.pytorch as L

    cfg, t = spec.config, spec.config.train

    class Stream(torch.utils.data.IterableDataset):
        def __iter__(self):
            rng = numpy_rng(spec.seed, "data")
            for _ in range(t.steps):
                yield task.sample(t.batch_size, t.seq_len, rng, "train")

    class Floor(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.model, self.automatic_optimization = TransformerLM(transformer_config(cfg, task.vocab_size)), False

        def training_step(self, batch, batch_idx):
            opt, sched = self.optimizers(), self.lr_schedulers()
            loss = _loss(self.model, *batch)
            opt.zero_grad(set_to_none=True)
            self.manual_backward(loss)
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), t.grad_clip)
            opt.step()
            sched.step()
            if not math.isfinite(loss.item()):
                raise RuntimeError("diverged")
            if (batch_idx + 1) % t.val_every == 0:
                rng_val = numpy_rng(spec.seed, "val")
                _evaluate(self.model, task, cfg.eval.val_examples, t.seq_len, cfg.eval.batch_size, rng_val, "val")

        def configure_optimizers(self):
            opt = torch.optim.AdamW(self.model.parameter_groups(t.weight_decay), lr=t.lr, betas=(0.9, 0.95))
            factor = lambda s: lr_factor(s, t.warmup_steps, t.steps, t.min_lr_ratio)  # noqa: E731
            return [opt], [torch.optim.lr_scheduler.LambdaLR(opt, factor)]

    warnings.filterwarnings("ignore", category=FutureWarning)  # torch 2.13's LeafSpec notice, every fit
    t0, c0 = time.perf_counter(), time.process_time()
    torch.manual_seed(stream_seed(spec.seed, "init"))
    module = Floor()
    trainer = L.Trainer(
        max_steps=t.steps, logger=False, enable_checkpointing=False, enable_progress_bar=False,
        enable_model_summary=False, num_sanity_val_steps=0,
    )  # fmt: skip
    t1 = time.perf_counter()
    trainer.fit(module, torch.utils.data.DataLoader(Stream(), batch_size=None))
    t2 = time.perf_counter()
    for mult, length in zip(cfg.eval.length_multipliers, cfg.eval_lengths()):
        batch = max(1, cfg.eval.batch_size * t.seq_len // length)
        _evaluate(module.model, task, cfg.eval.n_examples, length, batch, numpy_rng(spec.seed, "test", mult), "test")
    t3 = time.perf_counter()
    return {"wall": t3 - t0, "cpu": time.process_time() - c0, "train": t2 - t1, "test": t3 - t2}


def harness(spec, abl) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        t0, c0 = time.perf_counter(), time.process_time()
        rec = execute(spec, Path(tmp), abl=abl)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    assert rec.status == "ok", rec.reason
    return {"wall": wall, "cpu": cpu, "train": rec.fit_s, "test": rec.test_s}


def display_cost(repeat: int = 200) -> dict[str, float]:
    """Seconds per progress write and per poll of 16 run folders (one with a progress file), and
    the fraction of a process's time they take at their cadence (a write every ``EVERY_S`` in
    each run; a poll every ``POLL_S`` in the training process itself when it runs in-process)."""
    from rich.console import Console

    from harness.cli.progress import POLL_S, GridProgress
    from harness.store.runs import run_dir
    from harness.training.progress import EVERY_S, RunProgress, write_progress

    with tempfile.TemporaryDirectory() as tmp:
        specs = [
            SimpleNamespace(run_id=f"r{i}", ablation="a", profile="p", task="copy", variant_label="v", seed=i)
            for i in range(16)
        ]
        folder = run_dir(Path(tmp), "a", "p", "r0")
        folder.mkdir(parents=True)
        progress = RunProgress(step=10, total=100, loss=1.0, start_step=0, elapsed_s=1.0, updated_at=time.time())
        t0 = time.perf_counter()
        for _ in range(repeat):
            write_progress(folder, progress)
        write_s = (time.perf_counter() - t0) / repeat
        grid = GridProgress(Console(file=io.StringIO()), specs, Path(tmp), workers=1)
        t0 = time.perf_counter()
        for _ in range(repeat):
            grid.poll()
        poll_s = (time.perf_counter() - t0) / repeat
    return {"write_s": write_s, "poll_s": poll_s, "fraction": write_s / EVERY_S + poll_s / POLL_S}


def measure(task_name: str = "copy", steps: int = 1000, repeat: int = PAIRS) -> dict:
    """Bare loop vs ``ablate`` for one run of the cpu profile at ``steps`` steps; a dict of figures."""
    torch.set_num_threads(1)
    abl = load("pe_extrapolation")
    data = os.environ.get("ABLATE_DATA_DIR")
    _, specs = plan(abl, "cpu", [f"train.steps={steps}"], Path(data) if data else None)
    spec = next(s for s in specs if s.task == task_name and s.variant_label == "sinusoidal" and s.seed == 0)
    task = build_task(spec.task, spec.task_params, data_dir=Path(data) if data else None)
    m, t = spec.config.model, spec.config.train
    harness(spec, abl)  # warm-up: imports, first Trainer, allocator
    runs: dict[str, list[dict]] = {"bare": [], "lightning": [], "ablate": []}
    for _ in range(repeat):
        runs["bare"].append(bare(spec, task))
        runs["lightning"].append(lightning(spec, task))
        runs["ablate"].append(harness(spec, abl))
    pairs = list(zip(runs["bare"], runs["ablate"]))
    wall = sorted(h["wall"] / b["wall"] for b, h in pairs)
    cpu = sorted(h["cpu"] / b["cpu"] for b, h in pairs)
    train = sorted(h["train"] / b["train"] for b, h in pairs)
    floor_cpu = sorted(f["cpu"] / b["cpu"] for b, f in zip(runs["bare"], runs["lightning"]))
    b, f, h = (sorted(runs[k], key=lambda r: r["wall"])[(len(pairs) - 1) // 2] for k in runs)
    b_cpu, f_cpu, h_cpu = (statistics.median(r["cpu"] for r in runs[k]) for k in runs)
    display = display_cost()
    return {
        "task": task_name,
        "size": f"d_model {m.d_model}, {m.n_heads} heads, {m.n_layers} layers, batch {t.batch_size} at L={t.seq_len}",
        "steps": t.steps,
        "val_every": t.val_every,
        "bare": b,
        "lightning": f,
        "ablate": h,
        "pairs": len(pairs),
        "ratio": statistics.median(wall),
        "ratio_range": (wall[0], wall[-1]),
        "ratio_cpu": statistics.median(cpu),
        "ratio_cpu_range": (cpu[0], cpu[-1]),
        "ratio_train": statistics.median(train),
        "per_step_ms": 1e3 * (h["wall"] - b["wall"]) / t.steps,
        "per_step_cpu_ms": 1e3 * (h_cpu - b_cpu) / t.steps,
        "floor_ratio_cpu": statistics.median(floor_cpu),
        "floor_ratio_cpu_range": (floor_cpu[0], floor_cpu[-1]),
        "floor_step_cpu_ms": 1e3 * (f_cpu - b_cpu) / t.steps,
        "bare_step_ms": 1e3 * b["train"] / t.steps,
        "display": display,
        "goal": GOAL,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", choices=["copy", "tinyshakespeare"], default="copy")
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=PAIRS, help=f"alternating pairs (at least {MIN_PAIRS})")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args(argv)
    if args.repeat < MIN_PAIRS:
        parser.error(f"--repeat {args.repeat}: at least {MIN_PAIRS} pairs, so that one lucky pair is not the figure")
    r = measure(args.task, args.steps, args.repeat)
    if args.json:
        print(json.dumps(r))
        return
    b, f, h, d = r["bare"], r["lightning"], r["ablate"], r["display"]
    print(
        f"{r['task']}, sinusoidal, seed 0: {r['size']}, {r['steps']} steps, validation every {r['val_every']}, 1 thread"
    )
    print(f"median of {r['pairs']} alternating pairs (the run with the median wall time of each kind):")
    print(f"bare loop : {b['wall']:7.2f} s  (cpu {b['cpu']:.2f} s; train {b['train']:.2f} s, test {b['test']:.2f} s)")
    print(f"lightning : {f['wall']:7.2f} s  (cpu {f['cpu']:.2f} s; train {f['train']:.2f} s, test {f['test']:.2f} s)")
    print(f"ablate run: {h['wall']:7.2f} s  (cpu {h['cpu']:.2f} s; train {h['train']:.2f} s, test {h['test']:.2f} s)")
    (w0, w1), (c0, c1) = r["ratio_range"], r["ratio_cpu_range"]
    print(
        f"ratio (ablate / bare), whole run, median of the pairs: {r['ratio']:.3f} wall (min {w0:.3f}, max {w1:.3f}), "
        f"{r['ratio_cpu']:.3f} cpu (min {c0:.3f}, max {c1:.3f})   target <= {GOAL}"
    )
    print(f"ratio, training phase only, median: {r['ratio_train']:.3f}")
    print(
        f"per step: {r['per_step_ms']:+.2f} ms wall, {r['per_step_cpu_ms']:+.2f} ms cpu "
        f"(bare loop {r['bare_step_ms']:.2f} ms per step)"
    )
    (f0, f1), floor_ms = r["floor_ratio_cpu_range"], r["floor_step_cpu_ms"]
    print(
        f"of which Lightning's own loop (the bare step in a minimal fit): {r['floor_ratio_cpu']:.3f} cpu "
        f"(min {f0:.3f}, max {f1:.3f}), {floor_ms:+.2f} ms per step; ablate beyond it "
        f"{r['per_step_cpu_ms'] - floor_ms:+.2f} ms per step"
    )
    print(
        f"progress display: {1e6 * d['write_s']:.0f} us per write, {1e6 * d['poll_s']:.0f} us per poll of 16 runs: "
        f"{100 * d['fraction']:.3f} % of the time   target < {100 * DISPLAY_GOAL:g} %"
    )


if __name__ == "__main__":
    main()
