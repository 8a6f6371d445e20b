"""A tiny user ablation for the execution and reliability tests: seconds per grid on one core."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from harness.store.record import Record


def write_tiny(
    folder: Path,
    name: str = "tiny",
    steps: int = 40,
    val_every: int = 10,
    seeds: tuple[int, ...] = (0, 1),
    positions: tuple[str, ...] = ("sinusoidal", "learned"),
) -> Path:
    """Write ``folder/<name>.yaml``: copy task, ``positions`` x ``seeds`` runs of ``steps`` steps,
    validated (and checkpointed) every ``val_every`` steps."""
    decl = {
        "name": name,
        "question": "tiny?",
        "axes": {"model.position": list(positions)},
        "baseline": {"model.position": positions[0]},
        "base": {
            "model.d_model": 16,
            "model.n_heads": 2,
            "model.n_layers": 1,
            "train.steps": steps,
            "train.seq_len": 8,
            "train.val_every": val_every,
            "train.warmup_steps": 2,
            "train.batch_size": 8,
            "eval.length_multipliers": [1, 2],
            "eval.n_examples": 16,
            "eval.val_examples": 16,
        },
        "tasks": {
            "copy": {
                "params": {"n_symbols": 6},
                "primary": {"metric": "acc@x2", "higher_is_better": True, "sesoi": 0.05},
            }
        },
        "profiles": {"cpu": {"seeds": list(seeds), "confirmatory": False}},
        "default_profile": "cpu",
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(decl))
    return path


def records(results: Path, name: str = "tiny", profile: str = "cpu") -> dict[str, dict]:
    """Every ``record.json`` of the store, by run id (parsed as plain JSON, no validation)."""
    return {p.parent.name: json.loads(p.read_text()) for p in sorted((results / name / profile).glob("*/record.json"))}


TIMING = ("train_tokens_per_s",)


def numbers(record: Record | dict) -> dict:
    """A record's metrics (a Record, or its ``record.json`` as parsed by :func:`records`) without the
    timing ones (those differ between identical runs)."""
    metrics = record.metrics if isinstance(record, Record) else record["metrics"]
    return {k: v for k, v in metrics.items() if k not in TIMING}
