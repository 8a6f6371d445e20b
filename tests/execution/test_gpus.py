"""Placement of the local pool (harness/execution/gpus.py), tested as logic: the GPU slots (this
machine has no GPU) and the default number of CPU workers (its cost model and its rule)."""

from __future__ import annotations

import os
import queue
import random

import pytest
import torch

from harness.errors import AblateError
from harness.execution import gpus
from harness.execution import local as executors
from harness.execution.gpus import Placement, gpu_slots, place, visible_gpus


@pytest.mark.parametrize(
    "env, expected",
    [
        ({"CUDA_VISIBLE_DEVICES": "0,1,2,3"}, ["0", "1", "2", "3"]),
        ({"CUDA_VISIBLE_DEVICES": " 2, 5 "}, ["2", "5"]),
        ({"CUDA_VISIBLE_DEVICES": "GPU-aa,GPU-bb"}, ["GPU-aa", "GPU-bb"]),
        ({"CUDA_VISIBLE_DEVICES": ""}, []),
        ({"CUDA_VISIBLE_DEVICES": "-1"}, []),
    ],
)
def test_visible_gpus_follow_cuda_visible_devices(env, expected):
    assert visible_gpus(env, count=len(expected)) == expected


def test_visible_gpus_without_the_variable_counts_devices():
    assert visible_gpus({}, count=3) == ["0", "1", "2"]
    assert visible_gpus({}) == []  # no NVIDIA driver on this machine: torch not even asked


@pytest.mark.parametrize("value", ["NoDevFiles", "0", "0,1"])
def test_the_variable_names_gpus_torch_counts_them(value, monkeypatch):
    # Grid Engine sets NoDevFiles; "0" on a machine without a GPU: every run trained on the CPU, exit 0
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", value)
    assert visible_gpus() == []  # this machine: no driver, a CPU build of torch
    assert visible_gpus(count=0) == []
    with pytest.raises(AblateError, match=rf"none visible \(CUDA_VISIBLE_DEVICES='{value}', torch.cuda counts none\)"):
        place(None, 4, 1, visible_gpus(), gpus_per_run=1)


def test_ids_past_the_devices_torch_counts_are_dropped():
    # CUDA stops at the first id it cannot open: "0,7" on a 2-GPU machine gives one device
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "0,7"}, count=1) == ["0"]
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "3,1"}, count=2) == ["3", "1"]


def test_slots_are_disjoint_groups():
    assert gpu_slots(["0", "1", "2", "3"], 1) == ["0", "1", "2", "3"]
    assert gpu_slots(["0", "1", "2", "3"], 2) == ["0,1", "2,3"]
    assert gpu_slots(["0", "1", "2", "3", "4"], 2) == ["0,1", "2,3"]  # the fifth GPU stays idle


def test_too_many_gpus_per_run_is_bad_input():
    with pytest.raises(AblateError, match="--gpus-per-run 2 needs 2 GPU"):
        gpu_slots(["0"], 2)
    with pytest.raises(AblateError, match="none visible"):
        place(None, 4, 1, [], gpus_per_run=1)


def _where(p: Placement) -> tuple[int, tuple[str, ...]]:
    return p.workers, p.slots


def test_one_worker_per_gpu_by_default_never_more_than_runs():
    assert _where(place(None, 10, 1, ["0", "1", "2", "3"], None)) == (4, ("0", "1", "2", "3"))
    assert _where(place(None, 2, 1, ["0", "1", "2", "3"], None)) == (2, ("0", "1"))
    assert _where(place(2, 10, 1, ["0", "1", "2", "3"], None)) == (2, ("0", "1"))
    assert _where(place(None, 10, 1, ["0", "1", "2", "3"], 2)) == (2, ("0,1", "2,3"))
    assert place(None, 10, 1, ["0", "1"], None).reason == "one per GPU slot"


def test_more_workers_than_gpu_slots_is_bad_input():
    with pytest.raises(AblateError, match="--workers 3 but only 2 GPU slot"):
        place(3, 10, 1, ["0", "1"], None)


def test_cpu_workers_keep_workers_times_threads_within_the_cores():
    assert _where(place(None, 10, 1, [], None, cpus=2)) == (2, ())
    assert _where(place(None, 10, 2, [], None, cpus=2)) == (1, ())
    assert _where(place(None, 1, 1, [], None, cpus=8)) == (1, ())
    forced = place(3, 10, 1, [], None, cpus=2)  # asked for: granted, and said to oversubscribe
    assert _where(forced) == (3, ()) and forced.reason == (
        "--workers 3: 3 x 1 thread(s) on 2 cores, oversubscribed (each run slower)"
    )
    many = place(99, 8, 1, [], None, cpus=2)  # never more workers than runs
    assert _where(many) == (8, ()) and "--workers 99: 8 x 1 thread(s) on 2 cores, oversubscribed" in many.reason
    assert place(2, 10, 1, [], None, cpus=2).reason == "--workers 2"  # within the cores: nothing to say
    assert _where(place(None, 10, 1, ["0", "1"], 0, cpus=2)) == (2, ())  # --gpus-per-run 0: CPU
    assert not place(None, 10, 1, [], None, cpus=2).slots


def test_each_worker_pins_its_own_slot(monkeypatch):
    import torch

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "all")
    monkeypatch.setattr(torch, "set_num_threads", lambda n: None)
    slots: queue.Queue = queue.Queue()
    for slot in ("2,3", "0,1"):
        slots.put(slot)
    seen = []
    for _ in range(2):
        executors._init_worker(1, slots)
        seen.append(os.environ["CUDA_VISIBLE_DEVICES"])
    assert seen == ["2,3", "0,1"]


WATCHER = """
import sys, time
from harness.execution.local import _init_worker
_init_worker(1, None, (int(sys.argv[1]), None))
print("watching", flush=True)
time.sleep(60)
"""


def test_a_worker_dies_soon_after_ablate_does():
    import signal
    import subprocess
    import sys
    import time

    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    worker = subprocess.Popen([sys.executable, "-c", WATCHER, str(owner.pid)], stdout=subprocess.PIPE, text=True)
    assert worker.stdout.readline().strip() == "watching"
    owner.kill()
    owner.wait()
    t0 = time.monotonic()
    assert worker.wait(timeout=10) == -signal.SIGKILL  # as if killed with it
    assert time.monotonic() - t0 < 5


def _config(**overrides):
    from harness.config import RunConfig

    return RunConfig.model_validate(overrides) if overrides else RunConfig()


def test_forward_flops_match_torchs_count_of_a_training_step() -> None:
    """The cost model's FLOPs of a training step (3 forward passes' worth) against torch's own
    count of the real model's forward and backward (FlopCounterMode), at the cpu profile's copy
    size: within 25 % (the estimate leaves out norms, softmax and the exact head size)."""
    from torch.utils.flop_counter import FlopCounterMode

    from harness.experiment.ablation import load
    from harness.experiment.grid import plan
    from harness.modules import TransformerLM
    from harness.training.model_and_devices import transformer_config

    spec = next(s for s in plan(load("pe_extrapolation"), "cpu", check_data=False)[1] if s.task == "copy")
    cfg, t = spec.config, spec.config.train
    model = TransformerLM(transformer_config(cfg, 64))
    x = torch.randint(0, 64, (t.batch_size, t.seq_len))
    with FlopCounterMode(display=False) as counter:
        model(x).sum().backward()
    ours = 3 * gpus.forward_flops(cfg, t.batch_size, t.seq_len)
    assert 0.75 < ours / counter.get_total_flops() < 1.25, (ours, counter.get_total_flops())


def test_the_default_pool_starts_only_when_it_saves_twice_its_start() -> None:
    small = [0.4] * 8  # a smoke grid
    assert gpus.default_cpu_workers(small, 2)[0] == 1
    assert "too little to pay for a process pool" in gpus.default_cpu_workers(small, 2)[1]
    long = [30.0] * 8
    n, why = gpus.default_cpu_workers(long, 2)
    assert n == 2 and why.startswith("8 runs of ~30 s each, ~4 min in all on one worker; 2 save")
    assert gpus.default_cpu_workers([30.0] * 8, 16)[0] == 8  # never more workers than runs
    assert gpus.default_cpu_workers([100.0] + [0.4] * 7, 2)[0] == 1  # the longest run is the grid's time
    assert gpus.default_cpu_workers(long, 1)[0] == 1 and gpus.default_cpu_workers([30.0], 2) == (1, "one run")
    rng = random.Random(0)
    for _ in range(500):  # whenever a pool is chosen, its modelled time beats one worker by a margin
        estimates = [rng.lognormvariate(0, 2) for _ in range(rng.randint(2, 30))]
        cap = rng.randint(2, 8)
        k, _ = gpus.default_cpu_workers(estimates, cap)
        total = sum(estimates)
        pooled = gpus.POOL_START_S + max(total / (k * gpus.POOL_EFFICIENCY), max(estimates))
        assert k == 1 or pooled + gpus.POOL_START_S < total


def test_estimates_choose_the_default_and_workers_still_force_it() -> None:
    smoke = gpus.estimate_seconds(_config(**{"model": {"d_model": 32, "n_layers": 1}, "train": {"steps": 40}}))
    cpu = gpus.estimate_seconds(_config(**{"model": {"d_model": 64, "n_layers": 3}, "train": {"steps": 3000}}))
    assert smoke < 2 < 10 < cpu  # seconds: a smoke run vs a cpu-profile run
    assert gpus.estimate_seconds(_config(), threads=4) < gpus.estimate_seconds(_config())
    assert place(None, 8, 1, [], None, cpus=2, estimates=[smoke] * 8).workers == 1
    assert place(None, 8, 1, [], None, cpus=2, estimates=[cpu] * 8).workers == 2
    forced = place(2, 8, 1, [], None, cpus=2, estimates=[smoke] * 8)
    assert (forced.workers, forced.reason) == (2, "--workers 2")
