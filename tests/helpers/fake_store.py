"""A declared ablation and a store of finished runs whose metrics the test chooses (nothing
trains): for the commands that only read the store (plan, report --all)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from harness.execution.attempt import spec_record
from harness.experiment.ablation import load
from harness.experiment.grid import plan
from harness.store.runs import write_record
from harness.tuned import tuned_profile


def write_decl(folder: Path, name: str = "mini", claims: tuple[str, ...] = (), **profiles: dict[str, Any]) -> Path:
    """Write ``folder/<name>.yaml``: the copy task (primary ``acc@x2``, sesoi 0.05), positions
    sinusoidal (baseline), learned and rope, and ``profiles`` (default: pilot and cpu)."""
    decl = {
        "name": name,
        "question": "Do learned positions fall behind at 2L? A second sentence.",
        "claims": list(claims),
        "axes": {"model.position": ["sinusoidal", "learned", "rope"]},
        "baseline": {"model.position": "sinusoidal"},
        "base": {
            "model.d_model": 16,
            "model.n_heads": 2,
            "model.n_layers": 1,
            "train.steps": 10,
            "train.warmup_steps": 2,
            "train.val_every": 5,
            "train.seq_len": 8,
            "eval.length_multipliers": [1, 2],
        },
        "tasks": {
            "copy": {
                "params": {"n_symbols": 6},
                "primary": {"metric": "acc@x2", "higher_is_better": True, "sesoi": 0.05},
            }
        },
        "profiles": profiles
        or {"pilot": {"seeds": [0, 1, 2], "confirmatory": False}, "cpu": {"seeds": list(range(12))}},
        "default_profile": "cpu",
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(decl, sort_keys=False))
    return path


def write_runs(
    results: Path,
    decl: Path,
    profile: str,
    value: Callable[[str, int], float | None],
    finished_at: str = "2025-01-01T00:00:00+00:00",
    extra: Callable[[str, int], dict[str, float]] | None = None,
    overrides: tuple[str, ...] = (),
    tuned: dict[str, Any] | None = None,
    wall: Callable[[str, int], float] | None = None,
) -> int:
    """One ok record per run of ``profile``'s grid (with the key=value ``overrides``) with
    ``acc@x1 = acc@x2 = value(variant, seed)`` (None: no record for that run) and the metrics
    ``extra(variant, seed)`` (e.g. ``target_reached``); returns the number written. ``tuned``:
    write the runs ``ablate run --tuned`` makes at these best parameters instead (merged into the
    config, profile ``<profile>+tuned``). ``wall(variant, seed)``: the run's wall time (default 1 s)."""
    abl = load(str(decl))
    written = 0
    for spec in plan(abl, profile, list(overrides), check_data=False)[1]:
        if tuned is not None:
            spec = spec.tuned(tuned, tuned_profile(profile), "tuned")
        v = value(spec.variant_label, spec.seed)
        if v is None:
            continue
        record = spec_record(
            spec,
            status="ok",
            reason=None,
            metrics={"acc@x1": v, "acc@x2": v, **(extra(spec.variant_label, spec.seed) if extra else {})},
            n_params=1000,
            wall_time_s=wall(spec.variant_label, spec.seed) if wall else 1.0,
            finished_at=finished_at,
            commit="fake",
            versions={"python": "3"},
            platform="test",
            cpu_count=1,
            torch_threads=1,
            attempt=1,
        )
        write_record(results / spec.ablation / spec.profile / spec.run_id, record)
        written += 1
    return written


BARE_CONFIG = {
    "model": {"d_model": 8, "n_heads": 1, "n_layers": 1},
    "train": {"steps": 1, "batch_size": 1, "seq_len": 4},
    "eval": {"length_multipliers": [1]},
    "ffn": {},
    "block": {},
    "attention": {},
}
"""The least config a record must hold (the sections and keys every reader relies on)."""


def bare_record(**fields: Any) -> dict[str, Any]:
    """The JSON of a record with only the fields every reader relies on (run ``r1`` of ``a`` /
    ``p``, task copy, variant ``v``, seed 0, :data:`BARE_CONFIG`), updated with ``fields``."""
    return {
        "run_id": "r1",
        "ablation": "a",
        "profile": "p",
        "task": "copy",
        "variant_label": "v",
        "seed": 0,
        "config": BARE_CONFIG,
        **fields,
    }
