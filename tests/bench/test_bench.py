"""``ablate bench attention``: one row per kernel and length, failures as outcomes, JSON for the
report, and the report's "Speed and memory" section built from that JSON."""

import json
from types import SimpleNamespace

import pytest
import torch
from typer.testing import CliRunner

from harness.bench import attention as bench
from harness.cli import tools as bench_command
from harness.cli.app import app
from harness.experiment.ablation import load as load_ablation
from harness.experiment.selection import select
from harness.modules import KERNELS
from harness.report import bench as bench_report
from harness.report import markdown as report_mod
from harness.report import sections

ROW_TYPES = {
    "kernel": str,
    "status": str,
    "ms_fwd_bwd": float,
    "ms_min": float,
    "times_ms": list,
    "tokens_per_s": float,
    "peak_mib": float,
    "base_mib": float,
    "backend": str,
}


def refuse_flash(monkeypatch):
    def refuse(cls, *args, **kwargs):
        raise ValueError("kernel 'flash' is not available on cpu with torch.float32 (No available kernel.)")

    monkeypatch.setattr(KERNELS.get("flash"), "check_available", classmethod(refuse))


@pytest.fixture(scope="module")
def cpu_bench(tmp_path_factory):
    """The CPU bench at T = 64, 128 for math, sdpa, linear, and flash refused (as where torch has
    no CPU flash kernel; torch 2.13 has one), each (kernel, length) in its own child process."""
    mp = pytest.MonkeyPatch()
    refuse_flash(mp)
    out = tmp_path_factory.mktemp("results") / "bench"
    try:
        bench_command.attention_cmd(
            device="cpu", lengths="128,64", kernels="math,sdpa,flash,linear", d_model=16, n_heads=2, repeats=1, out=out
        )
    finally:
        mp.undo()
    return out / "attention-cpu-float32.json"


def test_cpu_bench_writes_one_json_per_device_and_dtype(cpu_bench):
    assert cpu_bench.name == "attention-cpu-float32.json"
    doc = json.loads(cpu_bench.read_text())
    assert doc["bench"] == "attention" and doc["schema"] == 1
    assert {"torch", "device", "device_name", "dtype", "threads", "loadavg_start", "loadavg_end"} <= set(doc["env"])
    assert doc["env"]["torch"] == torch.__version__ and doc["env"]["dtype"] == "float32" and doc["env"]["threads"] == 1
    assert doc["config"] | {"lengths": [64, 128], "repeats": 1, "d_model": 16} == doc["config"]
    assert [(r["kernel"], r["seq_len"]) for r in doc["rows"]] == [
        ("math", 64),
        ("math", 128),
        ("sdpa", 64),
        ("sdpa", 128),
        ("flash", None),
        ("linear", 64),
        ("linear", 128),
    ]
    for r in doc["rows"]:
        assert set(r) == set(bench.ROW_KEYS)


def test_cpu_bench_rows_measure_time_memory_and_backend(cpu_bench):
    rows = {(r["kernel"], r["seq_len"]): r for r in json.loads(cpu_bench.read_text())["rows"]}
    for (kernel, t), r in rows.items():
        if kernel == "flash":
            continue
        assert r["status"] == "ok", r
        assert all(isinstance(r[k], ROW_TYPES[k]) for k in ROW_TYPES)
        assert r["ms_fwd_bwd"] > 0 and r["tokens_per_s"] == pytest.approx(t / r["ms_fwd_bwd"] * 1e3)
        assert 50 < r["base_mib"] <= r["peak_mib"] < 4096  # a process with torch, not the parent's peak
        assert r["peak_mib"] <= r["peak_mib_after_repeats"]
    assert rows["math", 64]["backend"] == "math" and rows["linear", 64]["backend"] == "linear"
    assert rows["sdpa", 64]["backend"] in set(bench.SDPA_BACKENDS.values())


def test_unavailable_kernel_is_one_row_with_the_reason(cpu_bench):
    (flash,) = [r for r in json.loads(cpu_bench.read_text())["rows"] if r["kernel"] == "flash"]
    assert flash["status"] == "unavailable" and "not available on cpu" in flash["reason"]
    assert flash["ms_fwd_bwd"] is None and flash["backend"] is None


def test_flash_on_cpu_runs_as_flash():
    """torch 2.13 has a CPU flash kernel: forced flash must run it, and say so."""
    if "flash" not in bench.KERNELS.names() or not _flash_on_cpu():
        pytest.skip("this torch has no CPU flash kernel")
    row = bench.measure_layer(bench.BenchConfig(d_model=16, n_heads=2, repeats=1), "flash", 32)
    assert row["backend"] == "flash_attention" and row["backend_predicted"] == "flash_attention"


def _flash_on_cpu() -> bool:
    try:
        KERNELS.get("flash").check_available("cpu", torch.float32)
        return True
    except ValueError:
        return False


def test_oom_is_an_outcome_and_longer_lengths_are_skipped(monkeypatch):
    def fake(cfg, kernel, t):
        if t >= 128:
            return bench._failure(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 8.00 GiB"))
        return {"status": "ok", "ms_fwd_bwd": 1.0}

    monkeypatch.setattr(bench, "run_one", fake)
    rows = bench.bench(bench.BenchConfig(), ["sdpa"], [64, 128, 256])
    assert [r["status"] for r in rows] == ["ok", "oom", "skipped"]
    assert rows[1]["reason"].startswith("OutOfMemoryError: CUDA out of memory")
    assert rows[2]["reason"] == "oom at T=128 before"
    assert bench._failure(RuntimeError("[enforce fail] DefaultCPUAllocator: can't allocate memory"))["status"] == "oom"
    assert bench._failure(RuntimeError("something else"))["status"] == "error"


def test_cli_refuses_bad_input_before_running(tmp_path):
    def run(*args):
        return CliRunner().invoke(app, ["bench", "attention", "--out", str(tmp_path), *args])

    res = run("--device", "cpu", "--kernels", "math,flsh")
    assert res.exit_code == 2 and "did you mean 'flash'" in res.output
    res = run("--device", "cpu", "--lengths", "64,x")
    assert res.exit_code == 2 and "comma-separated integers" in res.output
    res = run("--device", "cpu", "--dtype", "fp8")
    assert res.exit_code == 2 and "float32, bfloat16, float16" in res.output
    if not torch.cuda.is_available():
        res = run("--device", "cuda")
        assert res.exit_code == 2 and "no CUDA device" in res.output
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    "args, words",
    [
        (["--lengths", ""], "--lengths names no length"),  # was: the whole default sweep, 128..4096
        (["--lengths", ","], "--lengths names no length"),
        (["--kernels", ""], "--kernels names no kernel"),  # was: every kernel
        (["--device", ""], "--device '': use cpu or cuda"),  # was: the default device
        (["--lengths", "99999999999999999999"], "is too long"),  # was: a crashed child, exit 0
        (["--out", "{file}/bench"], "is a file, not a folder"),  # was: a traceback after the bench ran
    ],
)
def test_cli_refuses_empty_lists_huge_lengths_and_an_out_it_cannot_create(tmp_path, monkeypatch, args, words):
    def no_bench(*a, **k):
        raise AssertionError("the bench was about to run")

    monkeypatch.setattr(bench, "bench", no_bench)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    out = tmp_path / "out"
    args = [a.format(file=blocker) for a in args]
    device = [] if "--device" in args else ["--device", "cpu"]
    res = CliRunner().invoke(app, ["bench", "attention", "--out", str(out), *device, *args])
    assert res.exit_code == 2 and isinstance(res.exception, (SystemExit, type(None))), res.output
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith("error: ") and words in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"] and blocker.read_text() == "x"


# --- the report section --------------------------------------------------------------------------


def fake_doc(device="cpu"):
    def ok(kernel, t, ms, added):
        return dict.fromkeys(bench.ROW_KEYS) | {
            "kernel": kernel,
            "seq_len": t,
            "status": "ok",
            "ms_fwd_bwd": ms,
            "tokens_per_s": t / ms * 1e3,
            "peak_mib": 200 + added,
            "base_mib": 200.0,
            "backend": kernel,
        }

    rows = [
        ok(k, t, ms * t / 64, a * t / 64) for k, ms, a in (("math", 2.0, 4.0), ("sdpa", 1.0, 1.0)) for t in (64, 128)
    ]
    rows.append(dict.fromkeys(bench.ROW_KEYS) | {"kernel": "flash", "status": "unavailable", "reason": "no flash"})
    return {
        "bench": "attention",
        "schema": 1,
        "created": "2026-01-01T00:00:00Z",
        "rows": rows,
        "env": {"torch": "2.13", "device": device, "device_name": "x", "dtype": "float32", "threads": 1},
        "config": {"d_model": 64, "n_heads": 4, "batch": 1, "repeats": 10, "warmup": 2, "memory": "peak RSS"},
    }


def test_ratios_are_to_sdpa_at_the_same_length():
    rows = {(r["kernel"], r["seq_len"]): r for r in bench_report.with_ratios(fake_doc()["rows"])}
    assert rows["math", 128]["ms_ratio"] == pytest.approx(2.0) and rows["math", 128]["mem_ratio"] == pytest.approx(4.0)
    assert rows["sdpa", 64]["ms_ratio"] == 1.0 and rows["flash", None]["ms_ratio"] is None


def test_report_section_and_figure_from_the_json(tmp_path):
    results, out = tmp_path / "results", tmp_path / "reports"
    (results / "bench").mkdir(parents=True)
    (results / "bench" / "attention-cpu-float32.json").write_text(json.dumps(fake_doc()))
    (results / "bench" / "attention-cuda-bfloat16.json").write_text("{not json")
    (out / "figures").mkdir(parents=True)
    lines = bench_report.bench_section(load_ablation("attention_kernel"), results / "bench", out / "figures", out)
    text = "\n".join(lines)
    assert "## Speed and memory (`ablate bench attention`)" in text
    assert "| " + " | ".join(bench_report.COLUMNS) + " |" in text
    assert "| math | 128 | 4 | 2.00 | 32,000 | 208 | 8.0 | 4.00 | math | ok |" in text
    assert "- `flash`: **unavailable** — no flash" in text
    assert "unreadable bench file" in text and "attention-cuda-bfloat16.json" in text
    fig = out / "figures" / "attention_kernel-bench-attention-cpu-float32.png"
    assert fig.stat().st_size > 1000 and "(figures/attention_kernel-bench-attention-cpu-float32.png)" in text


def test_report_section_only_for_kernel_ablations(tmp_path):
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "attention-cpu-float32.json").write_text(json.dumps(fake_doc()))

    def section(abl, results=tmp_path):
        return bench_report.bench_section(abl, results / "bench", tmp_path, tmp_path)

    assert section(SimpleNamespace(name="norm", axes={"block.norm": []})) == []
    assert section(SimpleNamespace(name="mine", axes={"attention.kernel": []}))
    assert section(load_ablation("attention_kernel"), tmp_path / "none") == []


def test_write_report_appends_the_section(tmp_path, monkeypatch):
    """The one call line in ``write_markdown`` (the store-dependent sections are stubbed out)."""
    results, out = tmp_path / "results", tmp_path / "reports"
    (results / "bench").mkdir(parents=True)
    (results / "bench" / "attention-cpu-float32.json").write_text(json.dumps(fake_doc()))
    from harness.report.tuning import TuningInputs
    from harness.store.runs import StoreScan

    result = SimpleNamespace(scan=StoreScan(), sequential=None, results=results)
    for name in ("warning_lines", "claims_section", "setup_section"):
        monkeypatch.setattr(sections, name, lambda *a, **k: [])
    for name in ("_results_section", "tuning_section", "failures_section"):
        monkeypatch.setattr(report_mod, name, lambda *a, **k: [])
    sel = select(load_ablation("attention_kernel"), "cpu", check_data=False)
    path = report_mod.write_markdown(sel, result, out, TuningInputs(None, None), {}, results / "bench")
    assert "## Speed and memory (`ablate bench attention`)" in path.read_text()
    assert (out / "figures" / "attention_kernel-bench-attention-cpu-float32.png").exists()


def test_the_bench_files_travel_with_the_data_file(tmp_path):
    """A kernel ablation's report keeps the store's bench files in its data file
    (``bench/``), and ``ablate report --from`` shows the same Speed section from them once the
    store is gone: the committed report is checkable without the store."""
    import shutil

    import yaml

    from harness.cli import run as run_cmd
    from harness.store import archive
    from helpers.cli import invoke, untimed
    from helpers.tiny_grid import write_tiny

    decl = write_tiny(tmp_path / "decl", name="kern", steps=4, val_every=2, seeds=(0, 1))
    spec = yaml.safe_load(decl.read_text())
    spec.update(axes={"attention.kernel": ["sdpa", "math"]}, baseline={"attention.kernel": "sdpa"})
    decl.write_text(yaml.safe_dump(spec))
    results, first, second = tmp_path / "results", tmp_path / "a", tmp_path / "b"
    assert run_cmd.run(str(decl), None, [], results, workers=1) == 0
    (results / "bench").mkdir()
    (results / "bench" / "attention-cpu-float32.json").write_text(json.dumps(fake_doc()))
    assert (
        invoke("report", str(decl), "--results-dir", str(results), "--out", str(first), "--wandb", "off").exit_code == 0
    )
    kept = archive.read(first / "data" / "kern.tar.gz", "kern").members["bench/attention-cpu-float32.json"]
    assert kept == (results / "bench" / "attention-cpu-float32.json").read_bytes()
    shutil.rmtree(results)
    made = invoke("report", str(decl), "--from", str(first / "data" / "kern.tar.gz"), "--out", str(second))
    assert made.exit_code == 0, made.output
    original = untimed((first / "kern.md").read_text())
    assert "## Speed and memory" in original and "| math | 128 | 4 | 2.00 |" in original
    assert untimed((second / "kern.md").read_text()) == original
    fig = "figures/kern-bench-attention-cpu-float32.png"
    assert (first / fig).read_bytes() == (second / fig).read_bytes()
    # and through a store restored from the data file (`ablate restore`): the bench file comes too
    store, third = tmp_path / "restored", tmp_path / "c"
    done = invoke("restore", str(first / "data" / "kern.tar.gz"), "--results-dir", str(store))
    assert done.exit_code == 0 and "bench files into " in done.stdout and "attention-cpu-float32.json" in done.stdout, (
        done.output
    )
    assert (store / "bench" / "attention-cpu-float32.json").read_bytes() == kept
    assert invoke("report", str(decl), "--results-dir", str(store), "--out", str(third)).exit_code == 0
    speed = original[original.index("## Speed and memory") :]
    assert speed in (third / "kern.md").read_text()
