"""The JSON Schema of an ablation file, built from its models, each task's ``Params`` and the registries' names.

The models: the declaration's pydantic models and RunConfig; the names are left open for a file with ``plugins:``.
Shipped as :data:`SHIPPED` (built-in names only); ``ablate schema`` prints it for the names registered now.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from harness.bounds import INT_MAX
from harness.config import RunConfig
from harness.experiment import claims as claims_file
from harness.experiment import metrics
from harness.experiment.ablation import Ablation
from harness.experiment.declaration import SAFE_NAME
from harness.experiment.plugins import families

SHIPPED = Path(__file__).with_name("ablation.schema.json")
"""The schema shipped with the package, for editors: ``# yaml-language-server: $schema=PATH``."""

OPEN = "_plugins"
"""The suffix of the definitions with component and task names left open (a file with ``plugins:``)."""

SAFE = f"^{SAFE_NAME.pattern}$"
Names = dict[str, list[str]]
"""Config key (``model.position``) or ``task`` -> the registered names and their aliases."""


def registered_names() -> Names:
    """Every name the registries hold now, with aliases, by the config key that selects it (``task``)."""
    return {
        f.config_key or "task": [*f.registry.names(), *(a for n in f.registry.names() for a in f.registry.aliases(n))]
        for f in families()
    }


def config_keys(names: Names | None) -> dict[str, dict[str, Any]]:
    """Every dotted config key -> the JSON Schema of its value and default; ``names``: a component key's enum."""
    full = RunConfig.model_json_schema()
    defaults = RunConfig().model_dump(mode="json")
    out = {}
    for section, ref in full["properties"].items():
        fields = full["$defs"][ref["$ref"].rsplit("/", 1)[-1]]["properties"]
        for key, prop in fields.items():
            path = f"{section}.{key}"
            enum = {"enum": names[path]} if names is not None and path in names else {}
            out[path] = {**_tidy(prop), "default": defaults[section][key], **enum}
    return out


def build() -> dict[str, Any]:
    """The schema of an ablation file for the names registered now, as plain data.

    A file with ``plugins:`` is checked against the definitions whose names are left open (suffix :data:`OPEN`), any
    other against those that list the registered names.
    """
    from harness.tasks import TASKS

    names = registered_names()
    pyd = _tidy(Ablation.model_json_schema())
    defs = {k: pyd["$defs"][k] for k in ("Control", "MetricSpec", "ParamSpec", "Sequential", "Threshold")}
    defs["MetricSpec"]["properties"]["metric"]["pattern"] = _metric_pattern(bare=False)
    defs["Threshold"]["properties"]["metric"]["pattern"] = _metric_pattern(bare=True)
    defs["Control"]["properties"]["guards"]["items"]["enum"] = list(claims_file.load_claims())
    closed, loose = config_keys(names), config_keys(None)
    for suffix, tasks, keys in (("", names["task"], closed), (OPEN, None, loose)):
        refs = {}  # one definition per key, one per variant where the names make them differ
        for path, prop in keys.items():
            ref = path if closed[path] == loose[path] else path + suffix
            defs[ref] = prop
            refs[path] = {"$ref": f"#/$defs/{ref}"}
        defs.update(_declaration(pyd, suffix, refs, tasks))
    defs.update({f"params.{t}": _tidy(TASKS.get(t).Params.model_json_schema()) for t in names["task"]})
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "ablate: an ablation declaration",
        "description": "An ablation file (docs/ablation-files.md). Written by `ablate schema`.",
        "if": {"required": ["plugins"], "properties": {"plugins": {"minItems": 1}}},
        "then": {"$ref": f"#/$defs/Ablation{OPEN}"},
        "else": {"$ref": "#/$defs/Ablation"},
        "$defs": defs,
    }


def _declaration(pyd: dict[str, Any], suffix: str, keys: dict[str, Any], tasks: list[str] | None) -> dict[str, Any]:
    """The definitions that depend on the names, named with ``suffix``; ``keys``: each config key's $ref."""
    config_ref = {"$ref": f"#/$defs/Config{suffix}"}
    task_name = {"type": "string", "enum": tasks} if tasks else {"type": "string", "pattern": SAFE}

    profile = copy.deepcopy(pyd["$defs"]["Profile"])
    pp = profile["properties"]
    pp["overrides"] = {**config_ref, "description": pp["overrides"]["description"]}
    pp["tasks"].update(propertyNames=task_name, additionalProperties=config_ref)
    pp["tune"]["propertyNames"] = {"enum": list(keys)}
    pp["only_tasks"]["items"] = task_name
    pp["only_tasks"]["uniqueItems"] = pp["only_variants"]["uniqueItems"] = True
    pp["seeds"]["uniqueItems"] = True

    entry = copy.deepcopy(pyd["$defs"]["TaskEntry"])
    entry["properties"]["config"] = {**config_ref, "description": entry["properties"]["config"]["description"]}
    entry_ref = f"#/$defs/TaskEntry{suffix}"
    if tasks:  # one entry per task, its params that task's
        per_task = {t: {"$ref": entry_ref, "properties": {"params": {"$ref": f"#/$defs/params.{t}"}}} for t in tasks}
        task_map = {"properties": per_task, "additionalProperties": False}
    else:
        task_map = {"propertyNames": task_name, "additionalProperties": {"$ref": entry_ref}}

    abl = copy.deepcopy(pyd)
    abl.pop("$defs")
    ap = abl["properties"]
    ap.pop("source")
    ap["name"]["pattern"] = ap["default_profile"]["pattern"] = SAFE
    ap["question"]["pattern"] = r"\S"
    ap["claims"]["items"]["enum"] = list(claims_file.load_claims())
    ap["claims"]["uniqueItems"] = True
    ap["axes"].update(
        properties={k: {"type": "array", "minItems": 1, "uniqueItems": True, "items": v} for k, v in keys.items()},
        additionalProperties=False,
    )
    ap["baseline"].update(properties=keys, additionalProperties=False, minProperties=1)
    ap["base"] = {**config_ref, "description": ap["base"]["description"]}
    ap["tasks"].update(task_map)
    ap["profiles"].update(
        propertyNames={"pattern": SAFE}, additionalProperties={"$ref": f"#/$defs/Profile{suffix}"}, minProperties=1
    )
    ap["tune"]["propertyNames"] = {"enum": list(keys)}
    return {
        f"Config{suffix}": {"type": "object", "properties": keys, "additionalProperties": False},
        f"TaskEntry{suffix}": entry,
        f"Profile{suffix}": profile,
        f"Ablation{suffix}": abl,
    }


def _metric_pattern(bare: bool) -> str:
    """The names a task's primary metric may take (``bare``: a gate or target, which may also say ``acc``)."""
    forms = [m.pattern.pattern.removesuffix("$") for m in metrics.METRICS if m.rankable]
    if bare:
        forms += [m.name for m in metrics.METRICS if m.rankable and m.per_length]
    return "^(?:" + "|".join(forms) + ")$"


def _tidy(node: Any) -> Any:
    """Pydantic's schema without its ``title`` entries, every integer at most :data:`INT_MAX`."""
    if isinstance(node, list):
        return [_tidy(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _tidy(v) for k, v in node.items() if not (k == "title" and isinstance(v, str))}
    if out.get("type") == "integer":
        out.setdefault("maximum", INT_MAX)
    return out


def text() -> str:
    """:func:`build`'s schema as the shipped file holds it: JSON, indented, ending with a newline."""
    return json.dumps(build(), indent=1, ensure_ascii=False) + "\n"
