"""A component whose numbers change must bump its version (harness/experiment/versions.py).

Each registered component (and the model around them, and the training loop) is run on a fixed,
seeded input; a few seeded random projections of its output are its fingerprint, committed in
tests/modules/fingerprints.json next to the version that produced them. The test fails when the
output moved while the version stayed the same (bump it), or when the version moved while the
committed fingerprint is the old one (record the new one). To record after a deliberate change:

    python tests/modules/test_fingerprints.py --write

Components run in float64 where they can (float32 where a kernel has no float64 path on this
machine); several compute internally in float32 (softmax, norms, RoPE's rotation), so the
tolerance is relative 1e-6 on the projections: far above run-to-run differences on one machine
(zero) and float32 rounding (~1e-7), far below a change of numerics (RoPE's float32 -> float64
angles moved its fingerprint by ~1e-4).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

from harness import modules
from harness.experiment import versions
from harness.experiment.versions import _FIELDS

FILE = Path(__file__).with_name("fingerprints.json")
T, VOCAB, N_PROJ = 256, 11, 8
T_HOOKS = 4096  # positions of the positional encodings' own hooks
RTOL = 1e-6
TRAIN_RTOL = 1e-4  # a few float32 training steps: summation order may differ between CPU builds


def _components() -> list[tuple[str, str, str, int]]:
    """(version key, config field, name, version) for every entry of every family a config names."""
    out = []
    for (_, field), attr in _FIELDS.items():
        registry = getattr(modules, attr)
        out += [(f"{field}:{name}", field, name, registry.version(name)) for name in registry.names()]
    return out


def _project(out: torch.Tensor) -> list[float]:
    """Mean, RMS and ``N_PROJ`` seeded random projections (scaled by 1/sqrt(n)) of ``out``."""
    x = out.detach().double().flatten()
    gen = torch.Generator().manual_seed(1234)
    w = torch.randn(N_PROJ, x.numel(), generator=gen, dtype=torch.float64)
    return [x.mean().item(), x.pow(2).mean().sqrt().item(), *(w @ x / x.numel() ** 0.5).tolist()]


def _model_fingerprint(field: str | None = None, name: str | None = None) -> tuple[list[float], str]:
    """Logits of a 2-layer model with the component ``field=name`` (else the defaults) on fixed tokens;
    for an initialisation (``field="init"``), the model's parameters as it draws them."""
    kw = {"vocab_size": VOCAB, "d_model": 16, "n_heads": 2, "n_layers": 2, "max_len": T}
    if field is not None:
        kw[field] = name
    if field == "mask_fill":
        kw["kernel"] = "math"  # the only kernel that fills masked scores with a value
    cfg = modules.TransformerConfig(**kw)
    dtype = torch.float64
    try:
        modules.KERNELS.get(cfg.kernel).check_available("cpu", dtype)
    except ValueError:
        dtype = torch.float32
    torch.manual_seed(0)
    model = modules.TransformerLM(cfg).to(dtype).eval()
    if field == "init":  # an initialisation: the parameters it draws, before they are replaced below
        return _project(torch.cat([p.detach().double().flatten() for p in model.parameters()])), "float64"
    gen = torch.Generator().manual_seed(3)
    with torch.no_grad():  # weights of unit scale: the default init (std 0.02) makes attention so flat
        for p in model.parameters():  # that a change of the scores hardly reaches the logits
            p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64) / p.shape[-1] ** 0.5 * 2)
        idx = torch.randint(0, VOCAB, (2, T), generator=torch.Generator().manual_seed(7))
        out = _project(model(idx))  # logits (2, T, V)
        if field == "position":  # and every hook of the encoding on its own
            hooks = modules.TransformerConfig(**{**kw, "d_model": 128, "max_len": T_HOOKS})  # D = 64
            out += _positional_hooks(modules.POSITIONAL.get(name)(hooks), hooks, dtype)
    return out, str(dtype).removeprefix("torch.")


def _positional_hooks(pe, cfg, dtype: torch.dtype) -> list[float]:
    """Projections of add_to_embeddings(0), rotate_qk(q, k) and attention_bias over T_HOOKS positions."""
    torch.manual_seed(5)  # the learned table's init
    gen = torch.Generator().manual_seed(11)
    q, k = (
        torch.randn(1, cfg.n_heads, T_HOOKS, cfg.d_head, generator=gen, dtype=torch.float64).to(dtype) for _ in range(2)
    )
    q2, k2 = pe.rotate_qk(q, k)
    bias = pe.attention_bias(4, T_HOOKS)  # the last 4 queries: every distance up to T_HOOKS - 1
    parts = [pe.add_to_embeddings(torch.zeros(1, T_HOOKS, cfg.d_model, dtype=dtype)), q2, k2]
    return [v for part in parts + ([bias] if bias is not None else []) for v in _project(part)]


def _training_fingerprint() -> tuple[list[float], str]:
    """Metrics of 8 steps of training (copy task, float32, one thread) that depend on numerics."""
    import tempfile

    from harness.config import build_config
    from harness.tasks import build_task
    from harness.training.loop import train

    cfg = build_config(
        {
            "model": {"d_model": 16, "n_heads": 2, "n_layers": 1, "max_len": 16},
            "train": {"steps": 8, "seq_len": 8, "batch_size": 8, "val_every": 4, "warmup_steps": 2},
            "eval": {"length_multipliers": [1, 2], "n_examples": 16, "val_examples": 16},
        },
        "fingerprint",
    )
    task = build_task("copy", {"n_symbols": 6})
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            out = train(cfg, task, 0, Path(tmp))
    finally:
        torch.set_num_threads(threads)
    keys = ("train_loss_final", "loss@x1", "loss@x2", "acc@x1", "grad_norm_mean")
    return [float(out.metrics[k]) for k in keys] + [float(h["loss"]) for h in out.history], "float32"


def current() -> dict[str, dict]:
    """Fingerprints and versions of the code as it is."""
    out = {}
    fp, dtype = _model_fingerprint()
    out["model"] = {"version": versions.MODEL_VERSION, "dtype": dtype, "fingerprint": fp}
    fp, dtype = _training_fingerprint()
    out["training"] = {"version": versions.TRAINING_VERSION, "dtype": dtype, "fingerprint": fp}
    for key, field, name, version in _components():
        fp, dtype = _model_fingerprint(field, name)
        out[key] = {"version": version, "dtype": dtype, "fingerprint": fp}
    return out


def _close(got: list[float], want: list[float], rtol: float) -> bool:
    """Each output's projections (``N_PROJ + 2`` numbers) within ``rtol`` of the recorded ones, by norm."""
    g, w = torch.tensor(got, dtype=torch.float64), torch.tensor(want, dtype=torch.float64)
    if g.shape != w.shape:
        return False
    n = N_PROJ + 2
    return all(
        bool((g[i : i + n] - w[i : i + n]).norm() <= rtol * w[i : i + n].norm() + 1e-12) for i in range(0, len(w), n)
    )


@pytest.fixture(scope="module")
def now() -> dict[str, dict]:
    return current()


def test_every_component_has_a_recorded_fingerprint(now) -> None:
    recorded = json.loads(FILE.read_text())
    missing = sorted(set(now) - set(recorded))
    assert not missing, f"no fingerprint recorded for {missing}: run `python {Path(__file__).name} --write`"


@pytest.mark.parametrize("key", ["model", "training", *(c[0] for c in _components())])
def test_output_changes_only_with_a_version_bump(now, key) -> None:
    recorded = json.loads(FILE.read_text()).get(key)
    if recorded is None:
        pytest.fail(f"{key}: no fingerprint recorded; run `python tests/modules/test_fingerprints.py --write`")
    got = now[key]
    same = _close(got["fingerprint"], recorded["fingerprint"], TRAIN_RTOL if key == "training" else RTOL)
    if got["version"] == recorded["version"]:
        assert same, (
            f"{key}: its output on the fixed input changed but its version is still "
            f"{got['version']}: bump its version (harness/experiment/versions.py for model/training, "
            f"else version= in its registry entry), then run `python tests/modules/test_fingerprints.py "
            f"--write`"
        )
    else:
        assert not same, (
            f"{key}: version {recorded['version']} -> {got['version']} but its output did not "
            f"change: keep version {recorded['version']} (a bump gives its runs new ids)"
        )
        pytest.fail(
            f"{key}: version is {got['version']}, the fingerprint file records {recorded['version']}: "
            f"run `python tests/modules/test_fingerprints.py --write` and commit it"
        )


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(f"usage: python {sys.argv[0]} --write")
    FILE.write_text(json.dumps(current(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {FILE}")
