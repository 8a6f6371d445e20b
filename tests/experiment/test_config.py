"""harness.config: dotted keys, ``key=value`` parsing, validation messages and the config hash.

Pure pydantic / YAML: nothing here imports torch or touches the disk.
"""

from __future__ import annotations

import hashlib
import json
import re

import pytest

from harness.config import (
    RunConfig,
    apply_overrides,
    build_config,
    check_path,
    config_hash,
    get_path,
    parse_override,
    valid_paths,
)
from harness.errors import AblateError

SECTIONS = ("model", "attention", "block", "ffn", "train", "eval")


# --- valid_paths / check_path -------------------------------------------------------------------


def test_valid_paths_are_every_leaf_of_every_section():
    paths = valid_paths()
    assert len(paths) == len(set(paths))
    assert {p.split(".")[0] for p in paths} == set(SECTIONS)
    assert all(p.count(".") == 1 for p in paths)
    for expected in (
        "model.d_model",
        "model.n_heads",
        "model.position",
        "model.max_len",
        "attention.kernel",
        "block.norm",
        "block.norm_position",
        "ffn.d_ff",
        "ffn.activation",
        "train.steps",
        "train.seq_len",
        "train.precision",
        "eval.length_multipliers",
    ):
        assert expected in paths
    # every path resolves on a default config, and the sections themselves are not keys
    cfg = RunConfig()
    for p in paths:
        get_path(cfg, p)
    assert not set(SECTIONS) & set(paths)


def test_check_path_accepts_every_valid_path():
    for p in valid_paths():
        check_path(p)


@pytest.mark.parametrize(
    "bad, suggestion",
    [
        ("model.positon", "model.position"),
        ("model.dmodel", "model.d_model"),
        ("train.step", "train.steps"),
        ("atention.kernel", "attention.kernel"),
    ],
)
def test_check_path_suggests_the_closest_key(bad, suggestion):
    with pytest.raises(AblateError) as info:
        check_path(bad)
    msg = str(info.value)
    assert f"unknown config key {bad!r}" in msg
    assert f"did you mean {suggestion!r}" in msg
    assert "valid keys:" in msg and "train.steps" in msg


@pytest.mark.parametrize("bad", ["train.", "", "model.d_model.x", "MODEL.D_MODEL"])
def test_check_path_rejects_malformed_keys(bad):
    with pytest.raises(AblateError, match="unknown config key"):
        check_path(bad)


def test_check_path_names_the_keys_of_a_section():
    with pytest.raises(
        AblateError, match=r"config key 'model' is a section; name one of its keys, dotted \(e.g. model.d_model\)"
    ) as info:
        check_path("model")
    assert "model.position" in str(info.value) and "train.steps" not in str(info.value)


# --- parse_override -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, key, value",
    [
        ("model.d_model=128", "model.d_model", 128),
        ("train.lr=0.002", "train.lr", 0.002),
        ("train.lr=2.0e-3", "train.lr", 0.002),
        ("model.position=rope", "model.position", "rope"),
        ("model.tie_embeddings=false", "model.tie_embeddings", False),
        ("model.tie_embeddings=true", "model.tie_embeddings", True),
        ("model.max_len=null", "model.max_len", None),
        ("model.max_len=~", "model.max_len", None),
        ("eval.length_multipliers=[1, 2, 4]", "eval.length_multipliers", [1, 2, 4]),
        ("eval.length_multipliers=[1,2]", "eval.length_multipliers", [1, 2]),
        ("model.position='5'", "model.position", "5"),  # quoted: a string
        ("train.precision=bf16-mixed", "train.precision", "bf16-mixed"),
        ("train.precision=32-true", "train.precision", "32-true"),
        ("model.position=", "model.position", ""),  # empty value: empty string
        ("  train.steps = 5", "train.steps", 5),  # whitespace around key and value
        ("model.position=a=b", "model.position", "a=b"),  # only the first '=' splits
        ("eval.length_multipliers=[1,", "eval.length_multipliers", "[1,"),  # bad YAML: the raw text
    ],
)
def test_parse_override_reads_the_value_as_yaml(text, key, value):
    k, v = parse_override(text)
    assert k == key
    assert v == value and type(v) is type(value)


def test_parse_override_scientific_without_dot_is_a_float():
    # YAML 1.2, as the ablation file and the editor read it: "1e-3" is a float (YAML 1.1 read a string)
    key, value = parse_override("train.lr=1e-3")
    assert value == 1e-3 and isinstance(value, float)
    assert build_config(apply_overrides({}, {key: value})).train.lr == pytest.approx(1e-3)


@pytest.mark.parametrize("text", ["noequals", "=5", " =5", "", "model.d_model"])
def test_parse_override_rejects_text_without_key_and_equals(text):
    with pytest.raises(AblateError) as info:
        parse_override(text)
    assert "is not of the form key=value" in str(info.value)
    assert repr(text) in str(info.value)


# --- apply_overrides ----------------------------------------------------------------------------


def test_apply_overrides_sets_nested_keys_and_copies():
    base = {"model": {"d_model": 64}, "train": {"steps": 10}}
    out = apply_overrides(base, {"model.n_heads": 2, "train.steps": 20, "eval.n_examples": 8})
    assert out == {"model": {"d_model": 64, "n_heads": 2}, "train": {"steps": 20}, "eval": {"n_examples": 8}}
    assert base == {"model": {"d_model": 64}, "train": {"steps": 10}}  # not mutated


def test_apply_overrides_checks_every_key():
    with pytest.raises(AblateError, match="did you mean 'model.position'"):
        apply_overrides({}, {"model.d_model": 32, "model.positon": "rope"})


def test_overrides_later_wins_and_build_types():
    pairs = dict(parse_override(t) for t in ["train.steps=5", "train.steps=7", "model.position=rope"])
    cfg = build_config(apply_overrides({}, pairs))
    assert cfg.train.steps == 7 and cfg.model.position == "rope"
    assert get_path(cfg, "train.steps") == 7


# --- RunConfig validation -----------------------------------------------------------------------


def test_defaults_are_valid_and_consistent():
    cfg = RunConfig()
    assert cfg.model.d_model % cfg.model.n_heads == 0
    assert cfg.model.max_len is None and cfg.ffn.d_ff is None
    assert cfg.eval_lengths() == [cfg.train.seq_len]


def test_eval_lengths_are_multiples_of_the_training_length():
    cfg = build_config(apply_overrides({}, {"train.seq_len": 16, "eval.length_multipliers": [1, 2, 4]}))
    assert cfg.eval_lengths() == [16, 32, 64]


def _error(overrides: dict, context: str = "") -> str:
    with pytest.raises(AblateError) as info:
        build_config(apply_overrides({}, overrides), context)
    return str(info.value)


def test_heads_must_divide_d_model_and_message_names_both():
    msg = _error({"model.d_model": 64, "model.n_heads": 3}, "variant 'rope' on task 'copy'")
    assert msg.startswith("invalid config for variant 'rope' on task 'copy': ")
    assert "model.d_model=64" in msg and "model.n_heads=3" in msg
    assert "not divisible" in msg
    assert "[1, 2, 4, 8, 16, 32, 64]" in msg  # the valid choices
    assert "\n" not in msg


@pytest.mark.parametrize(
    "overrides, words",
    [
        ({"train.steps": -5}, ["train.steps", "greater than 0", "-5"]),
        ({"train.steps": 0}, ["train.steps", "greater than 0"]),
        ({"train.steps": "abc"}, ["train.steps", "valid integer", "'abc'"]),
        ({"train.steps": 1.5}, ["train.steps", "fractional", "1.5"]),
        ({"train.lr": 0}, ["train.lr", "greater than 0"]),
        ({"model.dropout": 1.0}, ["model.dropout", "less than 1"]),
        ({"train.min_lr_ratio": 2}, ["train.min_lr_ratio", "less than or equal to 1"]),
        ({"train.precision": "fp16"}, ["train.precision", "'32-true'", "'bf16-mixed'", "'fp16'"]),
        ({"eval.length_multipliers": []}, ["length_multipliers must be a non-empty list"]),
        ({"eval.length_multipliers": [1, 0]}, ["length_multipliers must be a non-empty list of integers >= 1"]),
        ({"eval.length_multipliers": 4}, ["eval.length_multipliers", "valid list"]),
        ({"model.position": 5}, ["model.position", "valid string"]),
        ({"model.max_len": 0}, ["model.max_len", "greater than 0"]),
    ],
)
def test_ill_typed_or_out_of_range_values_name_the_key(overrides, words):
    msg = _error(overrides)
    assert msg.startswith("invalid config: ")
    for w in words:
        assert w in msg, (w, msg)
    assert "\n" not in msg


@pytest.mark.parametrize(
    "key, value",
    [
        ("train.steps", True),
        ("train.lr", True),
        ("train.grad_clip", False),
        ("model.max_len", True),
        ("eval.length_multipliers", [1, True]),
    ],
)
def test_booleans_are_not_numbers(key, value):
    # pydantic's lax mode would run `train.steps=true` as one step, `grad_clip=false` unclipped
    msg = _error({key: value})
    assert key in msg and "not a boolean" in msg


@pytest.mark.parametrize(
    "key, value, words",
    [
        ("train.steps", 99999999999999999999, ["train.steps", "from 1 to 2147483647", "99999999999999999999"]),
        ("train.warmup_steps", 2**31, ["train.warmup_steps", "from 0 to 2147483647"]),
        ("train.seed_salt", 2**63, ["train.seed_salt", "from 0 to 2147483647"]),
        ("model.max_len", 2**31, ["model.max_len", "from 1 to 2147483647"]),
        ("ffn.d_ff", 10**30, ["ffn.d_ff", "from 1 to 2147483647"]),
        ("eval.length_multipliers", [1, 2**40], ["eval.length_multipliers", "each item", "at most 2147483647"]),
    ],
)
def test_integers_too_large_for_torch_are_refused(key, value, words):
    # `train.steps=99999999999999999999` passed and every run failed in the DataLoader
    # (OverflowError: cannot fit 'int' into an index-sized integer)
    msg = _error({key: value})
    for w in words:
        assert w in msg, (w, msg)


def test_every_integer_key_is_bounded_and_the_bound_itself_is_accepted():
    """One rule for every integer key: each one refuses 2**31 and accepts 2**31 - 1."""
    sections = {name: field.annotation for name, field in RunConfig.model_fields.items()}
    int_keys = [
        f"{section}.{key}"
        for section, model in sections.items()
        for key, field in model.model_fields.items()
        if field.annotation in (int, int | None)
    ]
    assert {"train.steps", "model.d_model", "eval.n_examples", "train.seed_salt", "ffn.d_ff"} <= set(int_keys)
    heads_divide = {"model.d_model": 2**31 - 1, "model.n_heads": 1}  # 2**31 - 1 is prime
    for key in int_keys:
        assert "to 2147483647 (2**31 - 1) (got 2147483648)" in _error({**heads_divide, key: 2**31}), key
        cfg = build_config(apply_overrides({}, {**heads_divide, key: 2**31 - 1}))
        assert get_path(cfg, key) == 2**31 - 1


def test_booleans_still_set_boolean_keys():
    assert build_config(apply_overrides({}, {"model.tie_embeddings": False})).model.tie_embeddings is False


def test_several_problems_are_reported_together_on_one_line():
    msg = _error({"train.steps": -1, "train.batch_size": "x"})
    assert "train.steps" in msg and "train.batch_size" in msg
    assert "; " in msg and "\n" not in msg


def test_unknown_key_inside_a_section_is_rejected_with_a_suggestion():
    with pytest.raises(AblateError) as info:
        build_config({"model": {"d_model": 64, "positon": "rope"}})
    assert "model.positon: unknown key" in str(info.value)
    assert "did you mean 'model.position'" in str(info.value)


def test_valid_config_round_trips_through_json():
    overrides = {"model.d_model": 32, "model.n_heads": 8, "eval.length_multipliers": [1, 4]}
    cfg = build_config(apply_overrides({}, overrides))
    again = build_config(json.loads(json.dumps(cfg.model_dump(mode="json"))))
    assert again == cfg


# --- config_hash --------------------------------------------------------------------------------


def test_config_hash_is_pinned_sha256_of_canonical_json():
    payload = {"b": [1, 2], "a": 1}
    assert config_hash(payload) == hashlib.sha256(b'{"a":1,"b":[1,2]}').hexdigest()[:12]
    assert config_hash({"a": 1, "b": [1, 2]}) == "8baa73198470"  # pinned: run ids of stored results
    assert config_hash(payload, length=64) == hashlib.sha256(b'{"a":1,"b":[1,2]}').hexdigest()


def test_config_hash_ignores_key_order_at_every_level():
    a = {"x": {"p": 1, "q": 2}, "y": 3}
    b = {"y": 3, "x": {"q": 2, "p": 1}}
    assert config_hash(a) == config_hash(b)


def test_config_hash_changes_with_any_value():
    base = RunConfig().model_dump(mode="json")
    h0 = config_hash(base)
    assert h0 == config_hash(RunConfig().model_dump(mode="json"))  # same config, same hash
    seen = {h0}
    for path, value in [
        ("train.steps", 1001),
        ("model.position", "rope"),
        ("train.lr", 0.0011),
        ("eval.length_multipliers", [1, 2]),
        ("model.max_len", 64),
    ]:
        cfg = build_config(apply_overrides(base, {path: value}))
        h = config_hash(cfg.model_dump(mode="json"))
        assert h not in seen, path
        seen.add(h)
    assert re.fullmatch(r"[0-9a-f]{12}", h0), h0  # 12 hex digits: the run id's config part
