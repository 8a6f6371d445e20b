"""The example ablation file of docs/ablation-files.md and, for each key, a value it refuses: the
page quotes the error ``ablate show`` prints for it (:func:`refusal`), never one written by hand."""

from __future__ import annotations

import copy
import tempfile
from pathlib import Path
from typing import Any

import yaml

from harness.errors import AblateError
from harness.experiment import ablation
from harness.experiment.selection import select

EXAMPLE = """\
name: my_pe
question: Does RoPE keep copy accuracy at 4x the training length better than sinusoidal positions?
axes:
  model.position: [sinusoidal, rope, alibi]
baseline: {model.position: sinusoidal}
base: {model.d_model: 64, model.n_layers: 2, train.seq_len: 16, eval.length_multipliers: [1, 2, 4]}
tasks:
  copy:
    params: {n_symbols: 16}
    primary: {metric: acc@x4, higher_is_better: true, sesoi: 0.05}
    gate: {metric: acc@x1, min: 0.9}
profiles:
  smoke: {seeds: [0, 1], confirmatory: false, apply_gate: false,
          overrides: {train.steps: 40, train.val_every: 20, train.warmup_steps: 10}}
  cpu: {seeds: [0, 1, 2, 3, 4, 5, 6, 7], overrides: {train.steps: 2000}}
"""
"""The page's example: a complete file (``my_pe.yaml``), loaded and expanded when the page is written."""

_CONTROL = {"kind": "negative", "variant": "rope"}
BAD: dict[str, tuple[tuple[str, ...], Any]] = {
    "name": (("name",), "my pe"),
    "question": (("question",), " "),
    "claims": (("claims",), ["pe-learned-extrapolaton"]),
    "axes": (("axes",), {"model.positon": ["sinusoidal", "rope"]}),
    "baseline": (("baseline",), {"model.position": "learned"}),
    "base": (("base",), {"model.d_modle": 64}),
    "tasks": (("tasks",), {"copyy": {"primary": {"metric": "acc@x4", "sesoi": 0.05}}}),
    "profiles": (("profiles",), {"smoke": {"seeds": [0, 1], "overrides": {"model.position": "rope"}}}),
    "default_profile": (("default_profile",), "gpu"),
    "notes": (("notes",), ["a", "list"]),
    "identical_arms": (("identical_arms",), "maybe"),
    "tune": (("tune",), {"train.lr": {"type": "float", "low": 0.01, "high": 0.001}}),
    "control": (("control",), {"kind": "negative", "variant": "sinusoidal"}),
    "plugins": (("plugins",), ["no_such_plugin"]),
    "tasks.TASK.params": (("tasks", "copy", "params"), {"n_symbol": 16}),
    "tasks.TASK.config": (("tasks", "copy", "config"), {"train.seq_len": 0}),
    "tasks.TASK.primary": (("tasks", "copy", "primary"), {"metric": "acc@x4"}),
    "tasks.TASK.gate": (("tasks", "copy", "gate"), {"metric": "acc@x1", "max": 0.9}),
    "tasks.TASK.target": (("tasks", "copy", "target"), {"metric": "acc", "min": 1.5}),
    "tasks.TASK.primary.metric": (("tasks", "copy", "primary", "metric"), "accuracy@x4"),
    "tasks.TASK.primary.higher_is_better": (("tasks", "copy", "primary", "higher_is_better"), False),
    "tasks.TASK.primary.sesoi": (("tasks", "copy", "primary", "sesoi"), 0),
    "tasks.TASK.gate.metric": (("tasks", "copy", "gate", "metric"), "acc@x9"),
    "tasks.TASK.gate.min": (("tasks", "copy", "gate", "min"), 0.0),
    "tasks.TASK.gate.max": (("tasks", "copy", "gate", "max"), 0.1),
    "profiles.PROFILE.description": (("profiles", "cpu", "description"), 3),
    "profiles.PROFILE.seeds": (("profiles", "cpu", "seeds"), [0, 1, 1]),
    "profiles.PROFILE.confirmatory": (("profiles", "cpu", "confirmatory"), "no"),
    "profiles.PROFILE.apply_gate": (("profiles", "cpu", "apply_gate"), "maybe"),
    "profiles.PROFILE.overrides": (("profiles", "cpu", "overrides"), {"train.step": 2000}),
    "profiles.PROFILE.tasks": (("profiles", "cpu", "tasks"), {"reverse": {"train.steps": 10}}),
    "profiles.PROFILE.tune": (("profiles", "cpu", "tune"), {"model.position": {"type": "categorical", "choices": [1]}}),
    "profiles.PROFILE.only_tasks": (("profiles", "cpu", "only_tasks"), ["cpy"]),
    "profiles.PROFILE.only_variants": (("profiles", "cpu", "only_variants"), ["rope", "alibi"]),
    "profiles.PROFILE.exploratory_variants": (("profiles", "cpu", "exploratory_variants"), ["rop"]),
    "profiles.PROFILE.sequential": (("profiles", "cpu", "sequential"), [4, 8]),
    "profiles.PROFILE.sequential.looks": (("profiles", "cpu", "sequential"), {"looks": [8, 4]}),
    "profiles.PROFILE.sequential.spending": (("profiles", "cpu", "sequential"), {"looks": [4, 8], "spending": "obf"}),
    "profiles.PROFILE.sequential.alpha": (("profiles", "cpu", "sequential"), {"looks": [4, 8], "alpha": 1.5}),
    "profiles.PROFILE.sequential.futility": (("profiles", "cpu", "sequential"), {"looks": [4, 8], "futility": "no"}),
    "tune.KEY.type": (("tune",), {"train.lr": {"type": "log-float", "low": 0.001, "high": 0.01}}),
    "tune.KEY.low": (("tune",), {"train.lr": {"type": "float", "low": 0, "high": 0.01, "log": True}}),
    "tune.KEY.high": (("tune",), {"train.lr": {"type": "float", "low": 0.001}}),
    "tune.KEY.log": (("tune",), {"train.lr": {"type": "float", "low": 0.001, "high": 0.01, "log": "yes"}}),
    "tune.KEY.choices": (("tune",), {"train.batch_size": {"type": "categorical", "choices": []}}),
    "control.kind": (("control",), {**_CONTROL, "kind": "positive"}),
    "control.expect": (("control",), {**_CONTROL, "expect": "different"}),
    "control.variant": (("control",), {**_CONTROL, "variant": "rop"}),
    "control.guards": (("control",), {**_CONTROL, "guards": ["pe-learned-slowr"]}),
    "control.profile": (("control",), {**_CONTROL, "guards": ["pe-learned-slower"], "profile": "smoke"}),
}
"""Declaration key -> (where in the example file, a bad value there): the page quotes the error."""


def _show(text: str, overrides: tuple[str, ...] = ()) -> None:
    """What ``ablate show my_pe.yaml [overrides]`` does with the file ``text``, the paths in its errors
    made ``my_pe.yaml``."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "my_pe.yaml"
        path.write_text(text)
        try:
            select(ablation.load(str(path)), None, overrides, check_data=False)
        except AblateError as exc:
            raise AblateError(str(exc).replace(str(path), "my_pe.yaml")) from None


def refusal(data: dict[str, Any], overrides: tuple[str, ...] = ()) -> str:
    """The error ``ablate show my_pe.yaml [overrides]`` prints for the declaration ``data``; ValueError
    when it is accepted (a bad value that is not bad)."""
    try:
        _show(yaml.safe_dump(data, sort_keys=False), overrides)
    except AblateError as exc:
        return f"error: {exc}"
    raise ValueError(f"the example with {overrides or data} was accepted; pick a value it refuses")


def with_value(data: dict[str, Any], where: tuple[str, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(data)
    node = out
    for part in where[:-1]:
        node = node[part]
    node[where[-1]] = value
    return out


def bad_config_value(prop: dict[str, Any]) -> Any:
    """A value of a config key that its schema ``prop`` refuses: below its bound, a misspelt name, a word."""
    options = prop.get("anyOf", [prop])
    first = next(o for o in options if o.get("type") != "null")
    if "enum" in first:
        return str(first["enum"][0])[:-1]
    if first.get("type") == "array":
        inner = first["items"]
        return [str(inner["enum"][0])[:-1]] if "enum" in inner else [0]
    if "exclusiveMinimum" in first:
        return first["exclusiveMinimum"]
    if "minimum" in first:
        return first["minimum"] - 1
    return "maybe" if first.get("type") == "boolean" else "many"


def check_example() -> None:
    """The example itself loads and expands (``ablate show`` accepts it)."""
    _show(EXAMPLE)
