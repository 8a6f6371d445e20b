"""The message of a declaration that fails validation: one line per problem, each naming its dotted place and fix.

A key not valid where it sits says where it belongs, or the keys valid there (never itself); a value of the wrong
form gets an example of the right one.
"""

from __future__ import annotations

import re
import types
import typing
from typing import Annotated, Any

from pydantic import BaseModel, ValidationError

from harness.config import valid_paths
from harness.errors import pydantic_message
from harness.registry import did_you_mean


def _bare(annotation: Any) -> Any:
    """``annotation`` without ``Annotated`` and ``| None``; None for a union of several types."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Annotated:
        return _bare(args[0])
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        return _bare(inner[0]) if len(inner) == 1 else None
    return annotation


def _unwrap(annotation: Any, step: str | int) -> Any:
    """What a value found under ``annotation`` at ``step`` of a location is declared as, or None.

    Declared as a model, a dict, a list or a plain type; None where the location leaves the declared structure.
    """
    if (model := _model(annotation)) is not None:
        field = model.model_fields.get(str(step))
        return field.annotation if field is not None else None
    bare = _bare(annotation)
    return (typing.get_args(bare) or (None,))[-1] if typing.get_origin(bare) in (dict, list) else None


def _model(annotation: Any) -> type[BaseModel] | None:
    """The model a field's annotation declares (through ``X | None`` and ``Annotated``), else None."""
    annotation = _bare(annotation)
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def _place(root: type[BaseModel], loc: tuple[str | int, ...]) -> tuple[type[BaseModel] | None, str | None]:
    """The model whose mapping holds the last key of ``loc`` and that key's field name.

    None: not a field of a model, e.g. a list item or a key of a free mapping.
    """
    annotation: Any = root
    for step in loc[:-1]:
        annotation = _unwrap(annotation, step)
        if annotation is None:
            return None, None
    model = _model(annotation)
    return model, (str(loc[-1]) if model is not None else None)


def _field_of(root: type[BaseModel], loc: tuple[str | int, ...]) -> tuple[type[BaseModel] | None, str | None]:
    """The model and field name that declare the value at ``loc`` (a list item: its list's field)."""
    while loc and isinstance(loc[-1], int):
        loc = loc[:-1]
    return _place(root, loc) if loc else (None, None)


LEVELS: tuple[tuple[str, str, str], ...] = (
    ("", "Ablation", "at the top level"),
    ("tasks.TASK.", "TaskEntry", "under a task (tasks: {NAME: {...}})"),
    ("tasks.TASK.primary.", "MetricSpec", "under a task's primary:"),
    ("tasks.TASK.gate.", "Threshold", "under a task's gate: or target:"),
    ("profiles.PROFILE.", "Profile", "under a profile (profiles: {NAME: {...}})"),
    ("profiles.PROFILE.sequential.", "Sequential", "under a profile's sequential:"),
    ("tune.KEY.", "ParamSpec", "under a tune: key"),
    ("control.", "Control", "under control:"),
)
"""Each level of a declaration: the prefix of its keys in docs/ablation-files.md, its model (its definition in the
schema), and where its keys belong, in the page's words."""

_HOMES = {model: home for _, model, home in LEVELS}

_BELONGS = {
    ("Ablation", "overrides"): "profiles: {cpu: {overrides: {train.steps: 1000}}} (base: sets a key for every profile)",
    ("Ablation", "seeds"): "profiles: {cpu: {seeds: [0, 1, 2]}}",
}
"""Examples for the keys most often written at the wrong level."""


def _models(root: type[BaseModel]) -> list[type[BaseModel]]:
    """``root`` and every model below it, each once."""
    out: list[type[BaseModel]] = []
    todo: list[Any] = [root]
    while todo:
        annotation = todo.pop()
        origin, args = typing.get_origin(annotation), typing.get_args(annotation)
        if origin is not None:
            todo.extend(args)
        elif isinstance(annotation, type) and issubclass(annotation, BaseModel) and annotation not in out:
            out.append(annotation)
            todo.extend(f.annotation for f in annotation.model_fields.values())
    return out


def _unknown_key(root: type[BaseModel], loc: tuple[str | int, ...]) -> str:
    """The message for a key not valid at ``loc``: where it belongs, or the keys valid here."""
    model, key = _place(root, loc)
    here = [k for k in (model.model_fields if model is not None else ()) if k != "source"]
    if model is not None and (example := _BELONGS.get((model.__name__, str(key)))):
        return f"not a key {_HOMES.get(model.__name__, 'here')}; it belongs under a profile, e.g. {example}"
    homes = [m.__name__ for m in _models(root) if m is not model and key in m.model_fields]
    if homes and model is not None:
        where = " or ".join(_HOMES.get(h, h) for h in homes)
        return f"not a key {_HOMES.get(model.__name__, 'here')}; {key} belongs {where}"
    config = [p for p in valid_paths() if p.rsplit(".", 1)[-1] == key]
    if config and model is not None and model.__name__ == "Profile":
        return f"not a profile key; {config[0]} is a config key: set it as overrides: {{{config[0]}: ...}}"
    if config and model is not None:
        return (
            f"not a key here; {config[0]} is a config key: set it in base: {{{config[0]}: ...}} or a "
            "profile's overrides"
        )
    hint = did_you_mean(str(key), [k for k in here if k != key])
    return f"unknown key{hint}" + (f"; the keys here: {', '.join(here)}" if here and not hint else "")


def _seeds_example(given: Any) -> str:
    if isinstance(given, int) and not isinstance(given, bool) and 0 < given <= 64:
        return f"list every seed, e.g. for {given} seeds: seeds: [{', '.join(map(str, range(given)))}]"
    if isinstance(given, str) and given.strip(". ") == "":
        return "YAML has no range: list every seed, e.g. seeds: [0, 1, 2, 3, 4, 5, 6, 7]"
    return "list every seed, e.g. seeds: [0, 1, 2, 3, 4, 5, 6, 7]"


def _primary_example(given: Any) -> str:
    metric = given if isinstance(given, str) and given else "acc@x1"
    return f"write a mapping, e.g. primary: {{metric: {metric}, higher_is_better: true, sesoi: 0.05}}"


def _threshold_example(field: str) -> Any:
    return lambda given: (
        f"write a mapping, e.g. {field}: {{metric: {given if isinstance(given, str) else 'acc@x1'}, min: 0.5}}"
    )


def _tasks_example(given: Any) -> str:
    name = given[0] if isinstance(given, list) and given and isinstance(given[0], str) else "copy"
    return (
        f"write a mapping of task name to its entry, e.g. tasks: {{{name}: {{primary: {{metric: acc@x1, "
        f"higher_is_better: true, sesoi: 0.05}}}}}}"
    )


_EXAMPLES = {
    ("Profile", "seeds"): _seeds_example,
    ("TaskEntry", "primary"): _primary_example,
    ("TaskEntry", "gate"): _threshold_example("gate"),
    ("TaskEntry", "target"): _threshold_example("target"),
    ("Ablation", "tasks"): _tasks_example,
    ("Ablation", "profiles"): lambda given: "write a mapping, e.g. profiles: {cpu: {seeds: [0, 1, 2]}}",
    ("Profile", "overrides"): lambda given: "write a mapping, e.g. overrides: {train.steps: 1000}",
    ("Profile", "sequential"): lambda given: (
        "write a mapping, e.g. sequential: {looks: [4, 8], spending: obrien_fleming}"
    ),
    ("Ablation", "axes"): lambda given: (
        "write a mapping of config key to its values, e.g. axes: {model.position: [sinusoidal, rope]}"
    ),
}
"""The right form of the values newcomers most often write in another shape, by (model, field)."""

_CLASS_NAME = re.compile(r" or instance of \w+")


def format_declaration_error(exc: ValidationError, root: type[BaseModel], context: str) -> str:
    """``invalid declaration for CONTEXT: `` and one line per problem of ``exc`` (raised validating ``root``).

    Each names its dotted place and its fix: for a key not valid there, where it belongs or the keys valid there
    (never itself); for a value of the wrong form, an example of the right one.
    """
    lines = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        where = ".".join(str(p) for p in loc)
        given = err.get("input")
        if err["type"] == "extra_forbidden":
            lines.append(f"{where}: {_unknown_key(root, loc)}")
            continue
        msg = _CLASS_NAME.sub("", pydantic_message(err))
        got = f" (got {given!r})" if "input" in err and err["type"] != "missing" else ""
        model, field = _field_of(root, loc)
        example = _EXAMPLES.get((model.__name__, field)) if model is not None else None
        if example is not None and (err["type"].endswith("_type") or err["type"].startswith("model_")):
            got += f"; {example(given)}"
        elif err["type"] == "list_type" and isinstance(given, str):
            got += f"; write a list in brackets: [{given}]"
        lines.append(f"{where}: {msg}{got}" if where else msg)
    return f"invalid declaration for {context}: " + "; ".join(lines)
