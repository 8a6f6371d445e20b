"""Code versions: which version of each piece of code computed a run, and how they enter run ids.

The pieces: every registry entry, :data:`MODEL_VERSION`, :data:`TRAINING_VERSION`, each bumped when its numbers
change. How they enter run ids: docs/execution.md#the-run-store-and-run-ids.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from harness import registry
from harness.config import RunConfig

MODEL_VERSION = 1
"""Version of ``TransformerLM`` and the attention/FFN glue (harness/modules/transformer.py,
attention.py) outside the registered components."""

TRAINING_VERSION = 1
"""Version of the training loop (harness/training/: loop.py, lit.py, scoring.py): bump when a run's
metrics change for the same config, task and seed."""

# config field -> the registry in harness.registry that names its entries; the field's name prefixes their versions
_FIELDS = {
    ("model", "position"): "POSITIONAL",
    ("attention", "kernel"): "KERNELS",
    ("attention", "qkv"): "QKV",
    ("attention", "scale"): "SCALES",
    ("attention", "mask_fill"): "MASK_FILLS",
    ("attention", "head_split"): "HEAD_SPLITS",
    ("block", "norm"): "NORMS",
    ("block", "norm_position"): "BLOCKS",
    ("ffn", "activation"): "ACTIVATIONS",
    ("model", "init"): "INITS",
}


def run_versions(config: Mapping[str, Any]) -> dict[str, int]:
    """Every code version a run config uses (``{"model": 1, "position:rope": 2, ...}``); UnknownNameError."""
    out = {"model": MODEL_VERSION, "training": TRAINING_VERSION}
    for (section, key), registry_name in _FIELDS.items():
        name = (config.get(section) or {}).get(key)
        if name is not None:
            reg = getattr(registry, registry_name)
            out[f"{key}:{reg.canonical(name)}"] = reg.version(name)
    return out


def hashed_versions(versions: Mapping[str, int]) -> dict[str, int]:
    """The versions a run id hashes: those other than 1, sorted by key.

    All 1: none, so the ids of runs stored without versions still match.
    """
    return {k: v for k, v in sorted(versions.items()) if v != 1}


def record_versions(code_versions: Mapping[str, int] | None, config: Mapping[str, Any]) -> dict[str, int] | None:
    """A stored run's ``code_versions``, or version 1 of every component its ``config`` used.

    The latter for a record from before they were kept; None when this code lacks one.
    """
    if code_versions is not None:
        return dict(code_versions)
    try:
        return {k: 1 for k in run_versions(config)}
    except (KeyError, ValueError):
        return None


class Versioned(Protocol):
    """What a stored run says of its code (:class:`harness.store.record.Record`)."""

    code_versions: dict[str, int] | None
    config: RunConfig


def mixed_versions(records: Iterable[Versioned]) -> dict[str, list[int]]:
    """Pieces of code that ran at more than one version among ``records``: ``{"position:rope": [1, 2]}``.

    ``records``: one comparison's stored runs.
    """
    seen: dict[str, set[int]] = {}
    for rec in records:
        for key, version in (
            record_versions(rec.code_versions, rec.config.model_dump(exclude_unset=True)) or {}
        ).items():
            seen.setdefault(key, set()).add(version)
    return {k: sorted(v) for k, v in sorted(seen.items()) if len(v) > 1}


def mix_warning(task: str, mix: Mapping[str, list[int]]) -> str:
    """The warning that the runs compared on ``task`` were made by different code: each piece of ``mix``, the fix."""
    parts = ", ".join(f"{key} at versions {', '.join(map(str, vs))}" for key, vs in mix.items())
    return (
        f"the runs compared on {task} were made by different code ({parts}): a difference may come "
        "from the code, not the variant; remake the older runs (e.g. a fresh --results-dir)"
    )
