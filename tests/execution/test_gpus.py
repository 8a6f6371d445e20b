"""GPU placement of the local pool (harness/execution/gpus.py), tested as logic: this machine has no GPU."""

from __future__ import annotations

import os
import queue

import pytest

from harness.errors import AblateError
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
    assert visible_gpus(env) == expected


def test_visible_gpus_without_the_variable_counts_devices():
    assert visible_gpus({}, count=3) == ["0", "1", "2"]
    assert visible_gpus({}) == []  # no NVIDIA driver on this machine: torch not even asked


def test_slots_are_disjoint_groups():
    assert gpu_slots(["0", "1", "2", "3"], 1) == ["0", "1", "2", "3"]
    assert gpu_slots(["0", "1", "2", "3"], 2) == ["0,1", "2,3"]
    assert gpu_slots(["0", "1", "2", "3", "4"], 2) == ["0,1", "2,3"]  # the fifth GPU stays idle


def test_too_many_gpus_per_run_is_bad_input():
    with pytest.raises(AblateError, match="--gpus-per-run 2 needs 2 GPU"):
        gpu_slots(["0"], 2)
    with pytest.raises(AblateError, match="none visible"):
        place(None, 4, 1, [], gpus_per_run=1)


def test_one_worker_per_gpu_by_default_never_more_than_runs():
    assert place(None, 10, 1, ["0", "1", "2", "3"], None) == Placement(4, ("0", "1", "2", "3"))
    assert place(None, 2, 1, ["0", "1", "2", "3"], None) == Placement(2, ("0", "1"))
    assert place(2, 10, 1, ["0", "1", "2", "3"], None) == Placement(2, ("0", "1"))
    assert place(None, 10, 1, ["0", "1", "2", "3"], 2) == Placement(2, ("0,1", "2,3"))


def test_more_workers_than_gpu_slots_is_bad_input():
    with pytest.raises(AblateError, match="--workers 3 but only 2 GPU slot"):
        place(3, 10, 1, ["0", "1"], None)


def test_cpu_workers_keep_workers_times_threads_within_the_cores():
    assert place(None, 10, 1, [], None, cpus=2) == Placement(2)
    assert place(None, 10, 2, [], None, cpus=2) == Placement(1)
    assert place(None, 1, 1, [], None, cpus=8) == Placement(1)
    assert place(3, 10, 1, [], None, cpus=2) == Placement(3)  # asked for: granted
    assert place(None, 10, 1, ["0", "1"], 0, cpus=2) == Placement(2)  # --gpus-per-run 0: CPU
    assert not place(None, 10, 1, [], None, cpus=2).on_gpu


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
from harness.execution.local import _die_with
_die_with(int(sys.argv[1]), None, every=0.05)
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
