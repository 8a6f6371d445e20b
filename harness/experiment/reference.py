"""docs/ablation-files.md, written by ``ablate schema --markdown`` from the JSON Schema's sources and an example.

The page is written around a complete example file (:data:`EXAMPLE`); each key's "bad value" row quotes the error
``ablate show`` prints for the example with that one value (:data:`BAD`): a new key needs one.
"""

from __future__ import annotations

import copy
import functools
import tempfile
from pathlib import Path
from typing import Any

import yaml

from harness.errors import AblateError
from harness.experiment import ablation, metrics, schema
from harness.experiment import claims as claims_file
from harness.experiment.declaration_errors import LEVELS
from harness.experiment.plugins import families
from harness.experiment.selection import select
from harness.yaml12 import load_yaml

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
  smoke: {seeds: [0, 1], confirmatory: false, plumbing: true, apply_gate: false,
          overrides: {train.steps: 40, train.val_every: 20, train.warmup_steps: 10}}
  cpu: {seeds: [0, 1, 2, 3, 4, 5, 6, 7], overrides: {train.steps: 2000}}
"""
"""The page's example: a complete file (``my_pe.yaml``), loaded and expanded when the page is written."""

_CONTROL = {"kind": "negative", "variant": "rope"}
BAD: dict[str, Any] = {
    "name": "my pe",
    "question": " ",
    "claims": ["pe-learned-extrapolaton"],
    "axes": {"model.positon": ["sinusoidal", "rope"]},
    "baseline": {"model.position": "learned"},
    "base": {"model.d_modle": 64},
    "tasks": {"copyy": {"primary": {"metric": "acc@x4", "sesoi": 0.05}}},
    "profiles": {"smoke": {"seeds": [0, 1], "overrides": {"model.position": "rope"}}},
    "default_profile": "gpu",
    "notes": ["a", "list"],
    "identical_arms": "maybe",
    "tune": {"train.lr": {"type": "float", "low": 0.01, "high": 0.001}},
    "control": {"kind": "negative", "variant": "sinusoidal"},
    "plugins": ["no_such_plugin"],
    "tasks.TASK.params": {"n_symbol": 16},
    "tasks.TASK.config": {"train.seq_len": 0},
    "tasks.TASK.primary": {"metric": "acc@x4"},
    "tasks.TASK.gate": {"metric": "acc@x1", "max": 0.9},
    "tasks.TASK.target": {"metric": "acc", "min": 1.5},
    "tasks.TASK.primary.metric": "accuracy@x4",
    "tasks.TASK.primary.higher_is_better": False,
    "tasks.TASK.primary.sesoi": 0,
    "tasks.TASK.gate.metric": "acc@x9",
    "tasks.TASK.gate.min": 0.0,
    "tasks.TASK.gate.max": 0.1,
    "profiles.PROFILE.description": 3,
    "profiles.PROFILE.seeds": [0, 1, 1],
    "profiles.PROFILE.confirmatory": "no",
    "profiles.PROFILE.apply_gate": "maybe",
    "profiles.PROFILE.plumbing": "yes",
    "profiles.PROFILE.overrides": {"train.step": 2000},
    "profiles.PROFILE.tasks": {"reverse": {"train.steps": 10}},
    "profiles.PROFILE.tune": {"model.position": {"type": "categorical", "choices": [1]}},
    "profiles.PROFILE.only_tasks": ["cpy"],
    "profiles.PROFILE.only_variants": ["rope", "alibi"],
    "profiles.PROFILE.exploratory_variants": ["rop"],
    "profiles.PROFILE.sequential": [4, 8],
    "profiles.PROFILE.sequential.looks": {"looks": [8, 4]},
    "profiles.PROFILE.sequential.spending": {"looks": [4, 8], "spending": "obf"},
    "profiles.PROFILE.sequential.alpha": {"looks": [4, 8], "alpha": 1.5},
    "profiles.PROFILE.sequential.futility": {"looks": [4, 8], "futility": "no"},
    "tune.KEY.type": {"train.lr": {"type": "log-float", "low": 0.001, "high": 0.01}},
    "tune.KEY.low": {"train.lr": {"type": "float", "low": 0, "high": 0.01, "log": True}},
    "tune.KEY.high": {"train.lr": {"type": "float", "low": 0.001}},
    "tune.KEY.log": {"train.lr": {"type": "float", "low": 0.001, "high": 0.01, "log": "yes"}},
    "tune.KEY.choices": {"train.batch_size": {"type": "categorical", "choices": []}},
    "control.kind": {**_CONTROL, "kind": "positive"},
    "control.expect": {**_CONTROL, "expect": "different"},
    "control.variant": {**_CONTROL, "variant": "rop"},
    "control.guards": {**_CONTROL, "guards": ["pe-learned-slowr"]},
    "control.profile": {**_CONTROL, "guards": ["pe-learned-slower"], "profile": "smoke"},
}
"""Declaration key -> a bad value of it in the example file (:func:`_where`): the page quotes the error."""

_WHOLE = ("profiles.PROFILE.sequential.", "tune.KEY.", "control.")
"""The levels whose keys' bad values are given as a whole block (a sequential block, a tune mapping, a control)."""


def _where(key: str) -> tuple[str, ...]:
    """The path of keys in the example file that :data:`BAD`'s value for the declaration key ``key`` replaces.

    The key's own place (``TASK``: ``copy``, ``PROFILE``: ``cpu``), or for a key of :data:`_WHOLE` the block it is in.
    """
    whole = next((level for level in _WHOLE if key.startswith(level)), None)
    path = whole.removesuffix(".").removesuffix(".KEY") if whole else key
    return tuple(path.replace("TASK", "copy").replace("PROFILE", "cpu").split("."))


def _said(text: str, overrides: tuple[str, ...] = ()) -> str | None:
    """The error ``ablate show my_pe.yaml [overrides]`` prints for the file ``text``, None if it loads."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "my_pe.yaml"
        path.write_text(text, encoding="utf-8")
        try:
            select(ablation.load(str(path)), None, overrides, check_data=False)
        except AblateError as exc:
            return "error: " + str(exc).replace(str(path), "my_pe.yaml")
    return None


def refusal(data: dict[str, Any], overrides: tuple[str, ...] = ()) -> str:
    """:func:`_said` for the declaration ``data``; ValueError when it is accepted (a bad value that is not bad)."""
    if (said := _said(yaml.safe_dump(data, sort_keys=False), overrides)) is None:
        raise ValueError(f"the example with {overrides or data} was accepted; pick a value it refuses")
    return said


def with_value(data: dict[str, Any], where: tuple[str, ...], value: Any) -> dict[str, Any]:
    """A deep copy of the declaration ``data`` with ``value`` at ``where``, the path of keys that leads to it."""
    out = copy.deepcopy(data)
    functools.reduce(dict.__getitem__, where[:-1], out)[where[-1]] = value
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


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _code(value: Any) -> str:
    dumped = yaml.safe_dump(value, default_flow_style=True, width=10**6, sort_keys=False)
    return "`" + dumped.strip().removesuffix("...").strip() + "`"


def _type(prop: dict[str, Any], defs: dict[str, Any]) -> str:
    """A schema's type in words: ``integer``, ``list of string``, ``number or null``, ``mapping``."""
    if "$ref" in prop:
        target = prop["$ref"].rsplit("/", 1)[-1]
        if target.startswith("Config"):
            return "mapping of config keys"
        return _type(defs[target], defs) if "type" in defs[target] else "mapping"
    if "anyOf" in prop:
        return " or ".join(dict.fromkeys(_type(p, defs) for p in prop["anyOf"]))
    kind = prop.get("type", "any")  # a const (a one-value Literal) has its type too
    if kind == "array":
        items = prop.get("items", {})
        inner = _type(items, defs)
        return f"list of ({inner})" if "anyOf" in items else f"list of {inner}"
    return "mapping" if kind == "object" else kind


def _allowed(prop: dict[str, Any], defs: dict[str, Any]) -> str:
    """A schema's values in words: the names of an enum, a range, a pattern's rule."""
    if "$ref" in prop and not prop["$ref"].endswith(("Config", "Config" + schema.OPEN)):
        return _allowed(defs[prop["$ref"].rsplit("/", 1)[-1]], defs)
    parts = []
    for option in prop.get("anyOf", [prop]):
        item = option.get("items", option) if option.get("type") == "array" else option
        if "const" in item:
            parts.append(f"`{item['const']}`")
        if "enum" in item:
            parts.append(", ".join(f"`{v}`" for v in item["enum"]))
        for key, sign in (("exclusiveMinimum", ">"), ("minimum", "≥"), ("exclusiveMaximum", "<")):
            if key in item:
                parts.append(f"{sign} {item[key]:g}")
        if "maximum" in item and item["maximum"] != schema.INT_MAX:
            parts.append(f"≤ {item['maximum']:g}")
        if item.get("pattern") == schema.SAFE:
            parts.append("letters, digits, `_` `.` `-`")
        if "minItems" in option:
            parts.append(f"at least {option['minItems']}")
    return "; ".join(parts)


def _row(prop: dict[str, Any], defs: dict[str, Any], required: bool = False) -> str:
    """A key's type, default, allowed values and meaning (its own, else its definition's), as cells of a table row."""
    default = "required" if required else _code(prop["default"]) if "default" in prop else ""
    meaning = prop.get("description") or defs.get(prop.get("$ref", "#").rsplit("/", 1)[-1], {}).get("description", "")
    return f"{_type(prop, defs)} | {default} | {_cell(_allowed(prop, defs))} | {_cell(meaning)} |"


def _declaration_rows(defs: dict[str, Any], example: dict[str, Any]) -> tuple[list[str], list[str]]:
    rows = ["| key | type | default | allowed | meaning |", "|---|---|---|---|---|"]
    bad = ["| key | bad value | what `ablate show my_pe.yaml` says |", "|---|---|---|"]
    for prefix, name, _ in LEVELS:
        model = defs[name]
        for field, prop in model["properties"].items():
            key = prefix + field
            rows.append(f"| `{key}` | {_row(prop, defs, field in model.get('required', ()))}")
            if key not in BAD:
                raise ValueError(f"no bad value for the declaration key {key}; add one to reference.BAD")
            value = BAD[key]
            bad.append(
                f"| `{key}` | {_cell(_code(value))} | {_cell(refusal(with_value(example, _where(key), value)))} |"
            )
    return rows, bad


def _config_rows(defs: dict[str, Any], example: dict[str, Any]) -> list[str]:
    rows = [
        "| key | type | default | allowed | meaning | bad value: what `ablate show` says |",
        "|---|---|---|---|---|---|",
    ]
    axes = example["axes"]
    for key in schema.config_keys(None):
        value = bad_config_value(defs[key])
        written = _code(value)[1:-1]
        if key in axes:  # an axis: the bad value is one more point of the grid
            said = refusal(with_value(example, ("axes", key), [*axes[key], value]))
            shown = f"axes: {{{key}: [..., {written}]}}"
        else:
            shown = f"{key}={written}"
            said = refusal(example, (shown,))
        rows.append(f"| `{key}` | {_row(defs[key], defs)} `{_cell(shown)}`: {_cell(said)} |")
    return rows


PAGE = """\
# Ablation files: the reference

<!-- Written by `ablate schema --markdown > docs/ablation-files.md`; tests/experiment/test_reference.py fails when it \
is stale. Do not edit by hand. -->

An ablation is one YAML file. A complete one, `my_pe.yaml` (run it with `ablate run my_pe.yaml --profile smoke`):

```yaml
{example}
```

Keys named `model.d_model` are **config keys** (below): `axes`, `baseline`, `base`, a task's `config`, a profile's \
`overrides` and `tasks`, `tune`, and `KEY=VALUE` on the command line all take them. A run's config is resolved in \
this order, later entries winning: defaults < `base` < the task's `config` < the profile's `overrides` < the \
profile's `tasks` < command-line overrides < the variant's axis values. A profile may not change an axis. Every \
integer is at most 2147483647 (2**31 - 1).

Editors check and complete these files with the JSON Schema `harness/experiment/{shipped}` (`ablate schema` prints \
it): put `# yaml-language-server: $schema=PATH/TO/ablation.schema.json` on the file's first line (the YAML extension \
of VS Code, and other editors built on yaml-language-server, read it). With plugins, `ablate schema --plugin PKG > \
my.schema.json` adds their names.

On the command line, `ablate show` checks a file as every command does, the schema's checks and the rest (registered \
names, lengths a task holds, the data a task needs), and runs nothing: it prints the grid, or one `error:` line \
naming the key and its fix, exit 2:

```bash
ablate show my_pe.yaml --profile smoke
```

## Declaration keys

`TASK`: a task name; `PROFILE`: a profile name; `KEY`: a config key. `tasks.TASK.target` takes what `tasks.TASK.gate` \
takes, a profile's `tune` what `tune` takes.

{declaration}

What a bad value gets: the example with one value changed, loaded as `ablate show` does.

{declaration_bad}

## Config keys

The bad value is given as `ablate show my_pe.yaml KEY=VALUE` gives it (an axis: as one more value of the axis in the \
file).

{config}

## Registered names

What a component key takes (`ablate list --components` lists them with their plugins, `ablate check NAME` runs a \
name's contracts):

{names}

`eval.probes` takes {probes}.

### Task parameters (`tasks.TASK.params`)

{params}

### Metrics (`primary.metric`, `gate.metric`, `target.metric`)

`@x<N>`: at N x the training length L, for every N of `eval.length_multipliers` (a gate or target may name the \
validation pass at L by the bare name: `acc`). `[_init]`: also measured at initialisation.

{metrics}

### Claims (`claims`, `control.guards`)

| id | claim (the ablation that decides it) |
|---|---|
{claims}
"""


def markdown() -> str:
    """The page, for the names registered now (without plugins: the one in docs/)."""
    defs = schema.build()["$defs"]
    example = load_yaml(EXAMPLE)
    if said := _said(EXAMPLE):  # the example itself loads and expands
        raise AblateError(f"the example is refused: {said}")
    names = ["| config key | family | names (aliases) |", "|---|---|---|"]
    for fam in families():
        reg = fam.registry
        shown = [
            f"`{n}`" + (f" ({', '.join(f'`{a}`' for a in reg.aliases(n))})" if reg.aliases(n) else "")
            for n in reg.names()
        ]
        names.append(f"| `{fam.config_key or 'tasks: TASK'}` | {reg.family} | {', '.join(shown)} |")
    params = ["| task | param | type | default | allowed | meaning |", "|---|---|---|---|---|---|"]
    for task in schema.registered_names()["task"]:
        props = defs[f"params.{task}"]["properties"]
        if not props:
            params.append(f"| `{task}` | (none) | | | | |")
        params += [f"| `{task}` | `{param}` | {_row(prop, defs)}" for param, prop in props.items()]
    metric_rows = ["| metric | better | unit | a task's primary or gate |", "|---|---|---|---|"]
    for m in metrics.METRICS:
        better = "higher" if m.higher_is_better else "lower"
        metric_rows.append(f"| `{m.shown}` | {better} | {_cell(m.unit)} | {'yes' if m.rankable else 'no'} |")
    rows, bad = _declaration_rows(defs, example)
    return PAGE.format(
        example=EXAMPLE.rstrip(),
        shipped=schema.SHIPPED.name,
        declaration="\n".join(rows),
        declaration_bad="\n".join(bad),
        config="\n".join(_config_rows(defs, example)),
        names="\n".join(names),
        probes=", ".join(f"`{p}`" for p in defs["eval.probes"]["items"]["enum"]),
        params="\n".join(params),
        metrics="\n".join(metric_rows),
        claims="\n".join(
            f"| `{i}` | {_cell(c.claim)} (`{c.ablation}`) |" for i, c in claims_file.load_claims().items()
        ),
    )
