"""A small declaration for grid and profile-subset tests: two tasks, a 3 x 2 grid."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def decl(**profile: Any) -> dict[str, Any]:
    """Two tasks (copy, reverse), a 3 x 2 grid; ``profile`` is the ``sub`` profile's extra keys."""
    return {
        "name": "mini",
        "question": "q",
        "axes": {"model.position": ["sinusoidal", "rope", "nope"], "attention.kernel": ["sdpa", "math"]},
        "baseline": {"model.position": "sinusoidal", "attention.kernel": "sdpa"},
        "base": {"model.d_model": 16, "model.n_heads": 2, "model.n_layers": 1},
        "tasks": {
            t: {
                "params": {"n_symbols": 8},
                "config": {"train.seq_len": 8},
                "primary": {"metric": "acc@x1", "higher_is_better": True, "sesoi": 0.05},
            }
            for t in ("copy", "reverse")
        },
        "profiles": {"cpu": {"seeds": [0, 1]}, "sub": {"seeds": [0, 1, 2], **profile}},
    }


def write(tmp_path: Path, data: dict[str, Any]) -> str:
    """Write ``data`` as ``tmp_path/mini.yaml``; returns its path."""
    path = tmp_path / "mini.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)
