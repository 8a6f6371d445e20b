"""docs/ablation-files.md, written by ``ablate schema --markdown`` from the JSON Schema's sources
(:mod:`harness.experiment.schema`); each key's "bad value" row quotes the error the page's example
gets with that value (:mod:`harness.experiment.refusals`), so a new key needs one."""

from __future__ import annotations

from typing import Any

import yaml

from harness.experiment import claims as claims_file
from harness.experiment import metrics, refusals, schema
from harness.experiment.families import families

GROUPS: tuple[tuple[str, str], ...] = (
    ("", "Ablation"),
    ("tasks.TASK.", "TaskEntry"),
    ("tasks.TASK.primary.", "MetricSpec"),
    ("tasks.TASK.gate.", "Threshold"),
    ("profiles.PROFILE.", "Profile"),
    ("profiles.PROFILE.sequential.", "Sequential"),
    ("tune.KEY.", "ParamSpec"),
    ("control.", "Control"),
)
"""Each level of a declaration: the prefix of its keys on the page and its definition in the schema."""


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
    if "const" in prop:
        return "string"
    kind = prop.get("type", "any")
    if kind == "array":
        items = prop.get("items", {})
        inner = _type(items, defs)
        return f"list of ({inner})" if "anyOf" in items else f"list of {inner}"
    return {"object": "mapping", "null": "null"}.get(kind, kind)


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
        if item.get("pattern") == schema._safe():
            parts.append("letters, digits, `_` `.` `-`")
        if "minItems" in option:
            parts.append(f"at least {option['minItems']}")
    return "; ".join(parts)


def _row(prop: dict[str, Any], defs: dict[str, Any], required: bool = False, meaning: str | None = None) -> str:
    """A key's type, default, allowed values and meaning, as cells of a table row."""
    default = "required" if required else _code(prop["default"]) if "default" in prop else ""
    meaning = prop.get("description", "") if meaning is None else meaning
    return f"{_type(prop, defs)} | {default} | {_cell(_allowed(prop, defs))} | {_cell(meaning)} |"


def _declaration_rows(defs: dict[str, Any], example: dict[str, Any]) -> list[str]:
    rows = ["| key | type | default | allowed | meaning |", "|---|---|---|---|---|"]
    bad = ["| key | bad value | what `ablate show my_pe.yaml` says |", "|---|---|---|"]
    for prefix, name in GROUPS:
        model = defs[name]
        for field, prop in model["properties"].items():
            key = prefix + field
            ref = defs.get(prop.get("$ref", "#").rsplit("/", 1)[-1], {})
            meaning = prop.get("description") or ref.get("description", "")
            rows.append(f"| `{key}` | {_row(prop, defs, field in model.get('required', ()), meaning)}")
            if key not in refusals.BAD:
                raise ValueError(f"no bad value for the declaration key {key}; add one to refusals.BAD")
            where, value = refusals.BAD[key]
            bad.append(
                f"| `{key}` | {_cell(_code(value))} | {_cell(refusals.refusal(refusals.with_value(example, where, value)))} |"
            )
    return [
        *rows,
        "",
        "What a bad value gets: the example with one value changed, loaded as `ablate show` does.",
        "",
        *bad,
    ]


def _config_rows(defs: dict[str, Any], example: dict[str, Any]) -> list[str]:
    rows = [
        "| key | type | default | allowed | meaning | bad value: what `ablate show` says |",
        "|---|---|---|---|---|---|",
    ]
    axes = example["axes"]
    for key in schema.config_keys(None):
        value = refusals.bad_config_value(defs[key])
        if key in axes:  # an axis: the bad value is one more point of the grid
            said = refusals.refusal(refusals.with_value(example, ("axes", key), [*axes[key], value]))
            shown = f"axes: {{{key}: [..., {_code(value)[1:-1]}]}}"
        else:
            said = refusals.refusal(example, (f"{key}={_code(value)[1:-1]}",))
            shown = f"{key}={_code(value)[1:-1]}"
        rows.append(f"| `{key}` | {_row(defs[key], defs)} `{_cell(shown)}`: {_cell(said)} |")
    return rows


def _names_rows(names: schema.Names) -> list[str]:
    rows = ["| config key | family | names (aliases) |", "|---|---|---|"]
    for fam in families():
        reg = fam.registry
        shown = ", ".join(
            f"`{n}`" + (f" ({', '.join(f'`{a}`' for a in reg.aliases(n))})" if reg.aliases(n) else "")
            for n in reg.names()
        )
        rows.append(f"| `{fam.config_key or 'tasks: TASK'}` | {reg.family} | {shown} |")
    return rows


def _params_rows(defs: dict[str, Any], names: schema.Names) -> list[str]:
    rows = ["| task | param | type | default | allowed | meaning |", "|---|---|---|---|---|---|"]
    for task in names["task"]:
        props = defs[f"params.{task}"]["properties"]
        if not props:
            rows.append(f"| `{task}` | (none) | | | | |")
        rows += [f"| `{task}` | `{param}` | {_row(prop, defs)}" for param, prop in props.items()]
    return rows


def _metric_rows() -> list[str]:
    rows = ["| metric | better | unit | a task's primary or gate |", "|---|---|---|---|"]
    for m in metrics.METRICS:
        better = "higher" if m.higher_is_better else "lower"
        rows.append(f"| `{m.shown}` | {better} | {_cell(m.unit)} | {'yes' if m.rankable else 'no'} |")
    return rows


def markdown() -> str:
    """The page, for the names registered now (without plugins: the one in docs/)."""
    built = schema.build()
    defs = built["$defs"]
    names = schema.registered_names()
    example = yaml.safe_load(refusals.EXAMPLE)
    refusals.check_example()
    claims = claims_file.load_claims()
    parts = [
        "# Ablation files: the reference",
        "",
        "<!-- Written by `ablate schema --markdown > docs/ablation-files.md`; "
        "tests/experiment/test_reference.py fails when it is stale. Do not edit by hand. -->",
        "",
        "An ablation is one YAML file. A complete one, `my_pe.yaml` (run it with "
        "`ablate run my_pe.yaml --profile smoke`):",
        "",
        "```yaml",
        refusals.EXAMPLE.rstrip(),
        "```",
        "",
        "Keys named `model.d_model` are **config keys** (below): `axes`, `baseline`, `base`, a task's "
        "`config`, a profile's `overrides` and `tasks`, `tune`, and `KEY=VALUE` on the command line all take "
        "them. A run's config is resolved in this order, later entries winning: defaults < `base` < the task's "
        "`config` < the profile's `overrides` < the profile's `tasks` < command-line overrides < the variant's "
        "axis values. A profile may not change an axis. Every integer is at most 2147483647 (2**31 - 1).",
        "",
        "Editors check and complete these files with the JSON Schema "
        f"`harness/experiment/{schema.SHIPPED.name}` (`ablate schema` prints it): put "
        "`# yaml-language-server: $schema=PATH/TO/ablation.schema.json` on the file's first line "
        "(the YAML extension of VS Code, and other editors built on yaml-language-server, read it). "
        "With plugins, `ablate schema --plugin PKG > my.schema.json` adds their names.",
        "",
        "## Declaration keys",
        "",
        "`TASK`: a task name; `PROFILE`: a profile name; `KEY`: a config key. "
        "`tasks.TASK.target` takes what `tasks.TASK.gate` takes, a profile's `tune` what `tune` takes.",
        "",
        *_declaration_rows(defs, example),
        "",
        "## Config keys",
        "",
        "The bad value is given as `ablate show my_pe.yaml KEY=VALUE` gives it (an axis: as one more value of "
        "the axis in the file).",
        "",
        *_config_rows(defs, example),
        "",
        "## Registered names",
        "",
        "What a component key takes (`ablate list --components` lists them with their plugins, "
        "`ablate check NAME` runs a name's contracts):",
        "",
        *_names_rows(names),
        "",
        "`eval.probes` takes " + ", ".join(f"`{p}`" for p in defs["eval.probes"]["items"]["enum"]) + ".",
        "",
        "### Task parameters (`tasks.TASK.params`)",
        "",
        *_params_rows(defs, names),
        "",
        "### Metrics (`primary.metric`, `gate.metric`, `target.metric`)",
        "",
        "`@x<N>`: at N x the training length L, for every N of `eval.length_multipliers` (a gate or target "
        "may name the validation pass at L by the bare name: `acc`). `[_init]`: also measured at initialisation.",
        "",
        *_metric_rows(),
        "",
        "### Claims (`claims`, `control.guards`)",
        "",
        "| id | claim (the ablation that decides it) |",
        "|---|---|",
        *(f"| `{cid}` | {_cell(c['claim'])} (`{c['ablation']}`) |" for cid, c in claims.items()),
        "",
    ]
    return "\n".join(parts)
