"""The attention kernel bench: one row per kernel and length, failures as outcomes."""
import torch

from harness import bench
from harness.modules import KERNELS


def test_bench_rows_for_every_kernel():
    rows = bench.bench([16, 32], "cpu", torch.float32, repeats=1, heads=2, d_head=8)
    assert {r["kernel"] for r in rows} == set(KERNELS.names())
    for r in rows:
        assert r["status"] == "ok" and r["ms_fwd_bwd"] > 0 and r["backend"]


def test_bench_records_a_refusal(monkeypatch):
    def refuse(*a, **k):
        raise ValueError("kernel 'flash' is not available")

    monkeypatch.setattr(KERNELS.get("flash"), "check_available", classmethod(lambda cls, *a, **k: refuse()))
    rows = bench.bench([16, 32], "cpu", torch.float32, kernels=["flash"], repeats=1, heads=2, d_head=8)
    assert len(rows) == 1 and rows[0]["status"].startswith("ValueError: kernel 'flash' is not available")
