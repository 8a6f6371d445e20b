"""harness.experiment.ablation (declarations, profiles, grid) and harness.experiment.grid.plan (resolution, run ids).

No run is trained: :func:`plan` only builds configs and checks them. Only the ``copy`` task is used
for user declarations, so nothing needs the tinyshakespeare file except the registered ablation,
which reads it from ``ABLATE_DATA_DIR``.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.config import RunConfig, config_hash
from harness.errors import AblateError
from harness.experiment import ablation as ablation_mod
from harness.experiment.ablation import Ablation, load
from harness.experiment.grid import plan
from helpers.cli import assert_refused, invoke, user_file
from helpers.corpus import corpus_dir

POSITIONS = ["sinusoidal", "learned", "rope", "alibi", "nope", "learned_clamp", "learned_n01"]
RUN_BY_SMOKE = POSITIONS[:5]  # learned_clamp runs in the confirm profile only


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A private empty cache (tests/conftest.py: the corpus where the session found it, no network)."""
    monkeypatch.setenv("ABLATE_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def pe() -> Ablation:
    return load("pe_extrapolation")


def decl(name: str = "mini", **changes: Any) -> dict[str, Any]:
    """A small valid declaration on the copy task; ``changes`` replace top-level entries."""
    d: dict[str, Any] = {
        "name": name,
        "question": "Does the kernel matter?",
        "axes": {"attention.kernel": ["sdpa", "math"]},
        "baseline": {"attention.kernel": "sdpa"},
        "base": {"model.d_model": 32, "model.n_heads": 2, "model.position": "rope"},
        "tasks": {
            "copy": {
                "params": {"n_symbols": 8},
                "config": {"train.seq_len": 8},
                "primary": {"metric": "acc@x1", "higher_is_better": True, "sesoi": 0.05},
            }
        },
        "profiles": {"cpu": {"seeds": [0, 1]}, "smoke": {"seeds": [0], "overrides": {"train.steps": 5}}},
    }
    d.update(changes)
    return d


def write(tmp_path: Path, data: Any, name: str = "mini", text: str | None = None) -> str:
    path = tmp_path / f"{name}.yaml"
    path.write_text(text if text is not None else yaml.safe_dump(data, sort_keys=False))
    return str(path)


def load_error(path: str) -> str:
    with pytest.raises(AblateError) as info:
        load(path)
    msg = str(info.value)
    assert "\n" not in msg
    return msg


# --- the registered ablation --------------------------------------------------------------------


def test_pe_extrapolation_is_registered_and_loads(pe):
    assert "pe_extrapolation" in ablation_mod.available()
    assert pe.name == "pe_extrapolation"
    assert pe.source.endswith("pe_extrapolation.yaml")
    assert list(pe.axes) == ["model.position"]
    assert pe.axes["model.position"] == POSITIONS
    assert pe.baseline == {"model.position": "sinusoidal"}
    assert pe.baseline_label == "sinusoidal"
    assert list(pe.tasks) == ["copy", "tinyshakespeare"]
    assert pe.tasks["copy"].primary.metric == "acc@x4" and pe.tasks["copy"].primary.higher_is_better
    assert pe.tasks["tinyshakespeare"].primary.metric == "loss@x4"
    assert not pe.tasks["tinyshakespeare"].primary.higher_is_better
    assert list(pe.profiles) == [
        "smoke",
        "cpu",
        "confirm",
        "init",
        "long",
        "gpu",
        "reproduce",
    ]  # reproduce: harness/experiment/reproductions.yaml
    assert pe.default_profile == "cpu"
    assert [len(pe.profiles[p].seeds) for p in ("smoke", "cpu", "gpu")] == [2, 3, 10]


def test_variants_and_labels_follow_declaration_order(pe):
    assert pe.variants() == [{"model.position": p} for p in POSITIONS]
    assert [pe.label(v) for v in pe.variants()] == POSITIONS


def test_multi_axis_grid_is_a_product_first_axis_outermost():
    abl = Ablation.model_validate(
        decl(
            axes={"model.position": ["rope", "alibi"], "attention.kernel": ["sdpa", "math"]},
            baseline={"model.position": "rope", "attention.kernel": "sdpa"},
        )
    )
    assert abl.variants() == [
        {"model.position": "rope", "attention.kernel": "sdpa"},
        {"model.position": "rope", "attention.kernel": "math"},
        {"model.position": "alibi", "attention.kernel": "sdpa"},
        {"model.position": "alibi", "attention.kernel": "math"},
    ]
    assert [abl.label(v) for v in abl.variants()] == [
        "position=rope,kernel=sdpa",
        "position=rope,kernel=math",
        "position=alibi,kernel=sdpa",
        "position=alibi,kernel=math",
    ]
    assert abl.baseline_label == "position=rope,kernel=sdpa"


# --- profiles -----------------------------------------------------------------------------------


def test_profile_default_and_by_name(pe):
    assert pe.profile(None)[0] == "cpu"
    name, prof = pe.profile("smoke")
    assert name == "smoke" and prof.seeds == [0, 1] and prof.confirmatory is False


def test_unknown_profile_lists_the_profiles(pe):
    with pytest.raises(AblateError) as info:
        pe.profile("laptop")
    msg = str(info.value)
    assert "no profile 'laptop'" in msg and "profiles: smoke, cpu, confirm, init, long, gpu" in msg


def test_misspelt_profile_suggests_the_closest(pe):
    with pytest.raises(AblateError, match="did you mean 'smoke'"):
        pe.profile("smok")


# --- user declarations: load errors -------------------------------------------------------------


def test_a_valid_user_file_loads_by_path(tmp_path):
    abl = load(write(tmp_path, decl()))
    assert abl.name == "mini" and abl.source == str(tmp_path / "mini.yaml")
    assert load(str(tmp_path / "mini.yaml")) == abl  # loading is pure


def test_yml_suffix_is_accepted(tmp_path):
    path = tmp_path / "mini.yml"
    path.write_text(yaml.safe_dump(decl()))
    assert load(str(path)).name == "mini"


def test_unknown_registered_name_suggests_the_closest():
    with pytest.raises(AblateError) as info:
        load("pe_extrapolatoin")
    assert "unknown ablation 'pe_extrapolatoin'" in str(info.value)
    assert "did you mean 'pe_extrapolation'" in str(info.value)
    assert "ablate list" in str(info.value)


def test_missing_file(tmp_path):
    msg = load_error(str(tmp_path / "nothere.yaml"))
    assert "cannot read ablation file" in msg and "nothere.yaml" in msg and "`ablate list`" in msg


def test_a_registered_name_given_as_a_missing_yaml_file_points_at_the_name(tmp_path):
    msg = load_error(str(tmp_path / "pe_extrapolation.yaml"))
    assert "cannot read ablation file" in msg and "registered ablation 'pe_extrapolation' is named without .yaml" in msg


def test_malformed_yaml_names_the_file_and_line(tmp_path):
    msg = load_error(write(tmp_path, None, text="name: mini\naxes: [unclosed\n"))
    assert "mini.yaml is not valid YAML" in msg
    assert "line" in msg


@pytest.mark.parametrize("text", ["- a\n- b\n", "just a string\n", "", "42\n"])
def test_non_mapping_yaml(tmp_path, text):
    msg = load_error(write(tmp_path, None, text=text))
    assert "must hold a mapping" in msg and "mini.yaml" in msg


def test_baseline_not_in_the_grid(tmp_path):
    msg = load_error(write(tmp_path, decl(baseline={"attention.kernel": "flash"})))
    assert "invalid declaration for ablation mini.yaml" in msg
    assert "baseline attention.kernel='flash' is not in the grid ['sdpa', 'math']" in msg


def test_baseline_must_cover_every_axis(tmp_path):
    msg = load_error(write(tmp_path, decl(baseline={"model.position": "rope"})))
    assert "baseline must give one value per axis" in msg


@pytest.mark.parametrize(
    "profile",
    [
        {"seeds": [0], "overrides": {"attention.kernel": "math"}},
        {"seeds": [0], "tasks": {"copy": {"attention.kernel": "math"}}},
    ],
)
def test_a_profile_may_not_change_an_axis(tmp_path, profile):
    msg = load_error(write(tmp_path, decl(profiles={"cpu": profile})))
    assert "profile 'cpu' may not change an axis: ['attention.kernel']" in msg


def test_a_profile_may_not_name_an_unknown_task(tmp_path):
    msg = load_error(write(tmp_path, decl(profiles={"cpu": {"seeds": [0], "tasks": {"cpy": {"train.steps": 3}}}})))
    assert "names tasks not in the ablation: ['cpy']" in msg


@pytest.mark.parametrize(
    "section, where",
    [
        ("base", "base"),
        ("task", "tasks.copy.config"),
        ("profile", "profiles.cpu.overrides"),
        ("axes", "axes"),
    ],
)
def test_unknown_config_key_names_the_section_and_the_closest_key(tmp_path, section, where):
    d = decl()
    if section == "base":
        d["base"]["model.dmodel"] = 32
    elif section == "task":
        d["tasks"]["copy"]["config"]["model.dmodel"] = 32
    elif section == "profile":
        d["profiles"]["cpu"]["overrides"] = {"model.dmodel": 32}
    else:
        d["axes"] = {"model.dmodel": [32, 64]}
        d["baseline"] = {"model.dmodel": 32}
    msg = load_error(write(tmp_path, d))
    assert "mini.yaml" in msg
    assert f"{where}: unknown config key 'model.dmodel'" in msg
    assert "did you mean 'model.d_model'" in msg


@pytest.mark.parametrize(
    "mutate, words",
    [
        (
            lambda d: d.update(qestion=d.pop("question")),
            ["question: Field required", "qestion: unknown key", "did you mean 'question'"],
        ),
        (lambda d: d["profiles"]["cpu"].update(seed=[0]), ["profiles.cpu.seed: unknown key", "did you mean 'seeds'"]),
        (
            lambda d: d["tasks"]["copy"].update(primry=d["tasks"]["copy"].pop("primary")),
            ["tasks.copy.primary: Field required", "did you mean 'primary'"],
        ),
    ],
)
def test_misspelt_declaration_keys_suggest_the_declaration_key(tmp_path, mutate, words):
    d = decl()
    mutate(d)
    msg = load_error(write(tmp_path, d))
    for w in words:
        assert w in msg, (w, msg)
    assert "'source'" not in msg  # the whole input mapping is not dumped into the message


@pytest.mark.parametrize(
    "seeds, words",
    [
        (["0"], ["profiles.cpu.seeds.0", "valid integer", "'0'"]),
        ([0, "1"], ["profiles.cpu.seeds.1", "valid integer"]),
        ([True], ["profiles.cpu.seeds.0", "valid integer"]),
        ([0.0], ["profiles.cpu.seeds.0", "valid integer"]),
        ([], ["profiles.cpu.seeds", "at least 1"]),
        ([-1], ["profiles.cpu.seeds.0", "greater than or equal to 0"]),  # numpy SeedSequence rejects it
        ([0, 1, 0], ["profiles.cpu.seeds", "distinct", "[0]"]),  # would repeat run ids
        (list(range(20_000)), ["20,000 seeds; a profile holds at most 1,000", "ablate plan"]),  # show ran for hours
        (list(range(1001)), ["1,001 seeds"]),
    ],
    ids=lambda v: f"{len(v)} seeds" if isinstance(v, list) and len(v) > 10 else None,
)
def test_seeds_must_be_distinct_non_negative_integers(tmp_path, seeds, words):
    msg = load_error(write(tmp_path, decl(profiles={"cpu": {"seeds": seeds}})))
    for w in words:
        assert w in msg, (w, msg)


def test_a_thousand_seeds_load_and_many_repeats_are_named_briefly(tmp_path):
    """1,000 distinct seeds load (the limit), fast: the check of repeats was quadratic."""
    assert (
        len(load(str(write(tmp_path, decl(profiles={"cpu": {"seeds": list(range(1000))}})))).profiles["cpu"].seeds)
        == 1000
    )
    msg = load_error(write(tmp_path, decl(profiles={"cpu": {"seeds": list(range(30)) * 2}})))
    assert "repeated: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9] ..." in msg


def test_an_axis_may_not_repeat_a_value(tmp_path):
    msg = load_error(write(tmp_path, decl(axes={"attention.kernel": ["sdpa", "math", "sdpa"]})))
    assert "axis 'attention.kernel' repeats ['sdpa']" in msg


def test_an_axis_needs_values(tmp_path):
    assert "axis 'attention.kernel' has no values" in load_error(write(tmp_path, decl(axes={"attention.kernel": []})))


def test_default_profile_must_exist(tmp_path):
    msg = load_error(write(tmp_path, decl(default_profile="laptop")))
    assert msg.endswith("default_profile 'laptop' is not a profile; profiles: cpu, smoke")
    msg = load_error(write(tmp_path, decl(default_profile="smok")))
    assert msg.endswith("default_profile 'smok' is not a profile (did you mean 'smoke'?); profiles: cpu, smoke")


@pytest.mark.usefixtures("cli_isolated")
def test_without_default_profile_the_cpu_profile_must_exist(tmp_path):
    """Left out, default_profile is ``cpu``: the message says so rather than naming a key the file
    never wrote; ``profiles: {}`` says that it is empty."""
    profiles = {"smoke": {"seeds": [0]}, "gpu": {"seeds": [0, 1]}}
    msg = load_error(write(tmp_path, decl(profiles=profiles)))
    assert msg == (
        "invalid declaration for ablation mini.yaml: no default_profile given and no profile 'cpu' (the default when "
        "default_profile is left out); add default_profile: NAME (one of smoke, gpu) or declare a cpu profile"
    )
    for command in ("show", "run"):  # the CLI: exit 2, that one line, nothing run
        assert_refused(invoke(command, write(tmp_path, decl(profiles=profiles))), msg)
    assert load(write(tmp_path, decl(profiles=profiles, default_profile="smoke"))).default_profile == "smoke"
    msg = load_error(write(tmp_path, decl(profiles={})))
    assert msg.endswith("profiles is empty; declare at least one, e.g. profiles: {cpu: {seeds: [0, 1, 2]}}")


def test_file_name_must_match_the_declared_name(tmp_path):
    msg = load_error(write(tmp_path, decl(name="other"), name="mini"))
    assert "declares name 'other'" in msg and "other.yaml" in msg


# --- plan: resolution order, max_len, run ids --------------------------------------------------

LAYERED = {
    "axes": {"model.n_layers": [1, 2]},
    "baseline": {"model.n_layers": 1},
    # each layer sets the keys of every later layer too; the later layer must win
    "base": {
        "model.d_model": 32,
        "model.n_heads": 2,
        "model.position": "rope",
        "model.n_layers": 9,
        "train.steps": 110,  # above every later layer's warm-up and validation interval
        "train.batch_size": 11,
        "train.val_every": 11,
        "train.warmup_steps": 11,
        "eval.n_examples": 11,
        "eval.val_examples": 11,
    },
    "tasks": {
        "copy": {
            "params": {"n_symbols": 8},
            "config": {
                "model.n_layers": 9,
                "train.seq_len": 8,
                "train.batch_size": 12,
                "train.val_every": 12,
                "train.warmup_steps": 12,
                "eval.n_examples": 12,
                "eval.val_examples": 12,
                "eval.length_multipliers": [1, 3],
            },
            "primary": {"metric": "acc@x1", "higher_is_better": True, "sesoi": 0.05},
        }
    },
    "profiles": {
        "cpu": {
            "seeds": [0, 1],
            "overrides": {
                "train.val_every": 13,
                "train.warmup_steps": 13,
                "eval.n_examples": 13,
                "eval.val_examples": 13,
            },
            "tasks": {"copy": {"train.warmup_steps": 14, "eval.n_examples": 14, "eval.val_examples": 14}},
        }
    },
}


def test_plan_resolution_order():
    abl = Ablation.model_validate(decl(**LAYERED))
    name, specs = plan(abl, None, ["eval.val_examples=15"], None)
    assert name == "cpu" and len(specs) == 4
    defaults = RunConfig()
    for s in specs:
        c = s.config
        assert c.train.lr == defaults.train.lr  # defaults
        assert c.model.d_model == 32 and c.train.steps == 110  # base
        assert c.train.batch_size == 12  # task config over base
        assert c.train.val_every == 13  # profile overrides over task config
        assert c.train.warmup_steps == 14 and c.eval.n_examples == 14  # profile tasks over profile overrides
        assert c.eval.val_examples == 15  # CLI over profile tasks
        assert c.model.n_layers == s.variant["model.n_layers"]  # axis value over base and task config
    assert [s.config.model.n_layers for s in specs] == [1, 2, 1, 2]


def test_plan_fills_max_len_with_the_longest_evaluation_length():
    abl = Ablation.model_validate(decl(**LAYERED))
    _, specs = plan(abl, None, [], None)
    assert {s.config.model.max_len for s in specs} == {24}  # 3 x seq_len 8
    _, specs = plan(abl, None, ["model.max_len=100"], None)
    assert {s.config.model.max_len for s in specs} == {100}  # an explicit value is kept


def test_plan_orders_seed_then_task_then_variant_and_ids_are_stable(pe):
    data_dir = corpus_dir()
    name, specs = plan(pe, "smoke", [], data_dir)
    assert name == "smoke" and len(specs) == 20
    expected = [(seed, task, pos) for seed in (0, 1) for task in ("copy", "tinyshakespeare") for pos in RUN_BY_SMOKE]
    assert [(s.seed, s.task, s.variant_label) for s in specs] == expected
    ids = [s.run_id for s in specs]
    assert len(set(ids)) == 20  # differ across seeds, tasks and variants
    assert all(len(i) == 12 for i in ids)
    assert all(s.run_id == config_hash(s.payload()) for s in specs)
    assert [s.run_id for s in plan(load("pe_extrapolation"), "smoke", [], data_dir)[1]] == ids  # stable
    # the same variant and task under two seeds: same config, different id
    a, b = specs[0], specs[10]
    assert (a.task, a.variant_label) == (b.task, b.variant_label) and a.config == b.config
    assert a.seed != b.seed and a.run_id != b.run_id
    # any change of config changes every id
    assert not set(ids) & {s.run_id for s in plan(pe, "smoke", ["train.steps=41"], data_dir)[1]}


def test_plan_profiles_resolve_as_declared(pe):
    data_dir = corpus_dir()
    for profile, prof in pe.profiles.items():
        _, specs = plan(pe, profile, [], data_dir)
        view = pe.for_profile(profile)  # a profile's only_tasks / only_variants
        assert len(specs) == len(prof.seeds) * len(view.tasks) * len(view.variants()), profile
        for s in specs:
            layers = [pe.base, pe.tasks[s.task].config, prof.overrides, prof.tasks.get(s.task, {})]
            declared = {k: v for layer in layers for k, v in layer.items()}
            assert s.profile == profile and s.ablation == "pe_extrapolation"
            for key in ("model.d_model", "model.n_layers", "train.steps", "train.seq_len"):
                if key in declared:
                    section, field = key.split(".")
                    assert getattr(getattr(s.config, section), field) == declared[key], (profile, s.task, key)
            assert s.config.model.max_len == max(s.config.eval.length_multipliers) * s.config.train.seq_len
            assert s.config.model.position == s.variant["model.position"]


def test_plan_rejects_bad_input_before_any_run(pe):
    data_dir = corpus_dir()
    with pytest.raises(AblateError, match=r"model.position is an axis of pe_extrapolation"):
        plan(pe, "smoke", ["model.position=rope"], data_dir)
    with pytest.raises(AblateError, match="model.d_model=64 is not divisible by model.n_heads=3"):
        plan(pe, "cpu", ["model.n_heads=3"], data_dir)
    with pytest.raises(AblateError) as info:
        plan(pe, "cpu", ["model.max_len=40"], data_dir)
    msg = str(info.value)
    assert "variant 'learned' on task 'copy'" in msg
    assert "can represent 40 positions" in msg and "model.max_len" in msg
    assert re.search(r"evaluates at \d+ tokens", msg)


def test_plan_checks_the_model_only_of_variants_with_a_run_left_to_run(pe):
    """A variant whose every run is finished skips the model checks (they build its components);
    the others are checked as before, and the runs are the same either way."""
    data_dir = corpus_dir()
    learned = lambda s: s.variant_label == "learned"  # noqa: E731
    with pytest.raises(AblateError, match="variant 'learned' on task 'copy'.*can represent 40 positions"):
        plan(pe, "cpu", ["model.max_len=40"], data_dir, will_run=learned)
    _, specs = plan(pe, "cpu", ["model.max_len=40"], data_dir, will_run=lambda s: not learned(s))
    assert {s.variant_label for s in specs} >= {"learned", "rope"}
    assert [s.run_id for s in plan(pe, "cpu", [], data_dir, will_run=lambda s: False)[1]] == [
        s.run_id for s in plan(pe, "cpu", [], data_dir)[1]
    ]


def test_plan_unknown_component_name_in_base_suggests_the_closest(tmp_path):
    d = decl()
    d["base"]["model.position"] = "rop"
    abl = load(write(tmp_path, d))  # names are checked by the plan, not the loader
    with pytest.raises(AblateError) as info:
        plan(abl, None, [], None)
    assert "unknown positional encoding 'rop'" in str(info.value)
    assert "did you mean 'rope'" in str(info.value)


def test_plan_unknown_task_and_bad_task_params(tmp_path):
    d = decl()
    d["tasks"] = {"cpy": d["tasks"]["copy"]}
    with pytest.raises(AblateError, match="unknown task 'cpy' \\(did you mean 'copy'"):
        plan(Ablation.model_validate(d), None, [], None)
    d = decl()
    d["tasks"]["copy"]["params"] = {"n_symbol": 8}
    with pytest.raises(AblateError, match="did you mean 'n_symbols'"):
        plan(Ablation.model_validate(d), None, [], None)


def test_integers_too_large_for_torch_are_refused_in_task_params_and_seeds():
    # as for config keys: an integer past 2**31 - 1 would pass and fail every run in torch
    d = decl()
    d["tasks"]["copy"]["params"] = {"n_symbols": 10**20}
    with pytest.raises(AblateError, match=r"n_symbols.*from 1 to 2147483647 \(2\*\*31 - 1\)"):
        plan(Ablation.model_validate(d), None, [], None)
    d = decl()
    d["profiles"]["cpu"]["seeds"] = [0, 2**31]
    with pytest.raises(ValueError, match="less than or equal to 2147483647"):
        Ablation.model_validate(d)


def test_plan_does_not_mutate_the_declaration():
    d = decl(**LAYERED)
    abl = Ablation.model_validate(copy.deepcopy(d))
    before = abl.model_dump()
    plan(abl, None, ["eval.val_examples=15"], None)
    assert abl.model_dump() == before


@pytest.mark.usefixtures("cli_isolated")
def test_a_bad_control_declaration_is_refused(tmp_path):
    """``control:`` (a negative control) must name a grid point other than the baseline, of a known kind."""
    path = user_file(tmp_path)
    decl = yaml.safe_load(path.read_text())
    for control, words in (
        ({"kind": "negative", "variant": "mathh"}, ("control.variant 'mathh' is not a point of the grid", "'math'")),
        ({"kind": "negative", "variant": "sdpa"}, ("control.variant 'sdpa' is the baseline", "other points: ['math']")),
        ({"kind": "positive"}, ("control.kind",)),
    ):
        path.write_text(yaml.safe_dump({**decl, "control": control}))
        assert_refused(invoke("show", str(path)), *words)
    path.write_text(yaml.safe_dump({**decl, "control": {"kind": "negative", "variant": "math"}}))
    assert invoke("show", str(path)).exit_code == 0


@pytest.mark.parametrize(("metric", "sesoi"), [("acc@x1", 5), ("acc@x4", 1.0), ("exact@x1", 2)])
def test_a_sesoi_no_two_runs_can_differ_by_is_refused(tmp_path, metric, sesoi):
    # accuracy lies in [0, 1]: a sesoi of 5 made every comparison `equivalent`, without a word
    data = decl()
    data["tasks"]["copy"]["primary"] = {"metric": metric, "higher_is_better": True, "sesoi": sesoi}
    with pytest.raises(AblateError, match=rf"sesoi {sesoi:g} is not below the range of {re.escape(metric)}"):
        load(write(tmp_path, data))
    data["tasks"]["copy"]["primary"]["sesoi"] = 0.05
    assert load(write(tmp_path, data)).tasks["copy"].primary.sesoi == 0.05


def test_show_says_when_a_confirm_profile_has_too_few_seeds_to_decide(tmp_path):
    # 3 seeds, 2 comparisons: the exact sign-flip test's smallest p, 2 / 2**3, is above 0.05 / 2,
    # so no comparison can read better or worse; show says so before anything runs
    data = decl()
    data["axes"] = {"attention.kernel": ["sdpa", "math", "linear"]}
    data["base"]["model.position"] = "nope"  # linear attention takes no attention bias
    data["profiles"] = {"cpu": {"seeds": [0, 1, 2]}}
    result = invoke("show", write(tmp_path, data))
    assert result.exit_code == 0, result.output
    assert "note: profile cpu lists 3 seeds; with 2 primary comparison(s)" in result.stdout
    assert "needs at least 7 paired seeds" in result.stdout
    data["profiles"] = {"cpu": {"seeds": list(range(7))}}
    assert "note: profile" not in invoke("show", write(tmp_path, data)).stdout
    data["profiles"] = {"cpu": {"seeds": [0, 1, 2], "confirmatory": False}}  # a pilot decides nothing anyway
    assert "note: profile" not in invoke("show", write(tmp_path, data)).stdout
