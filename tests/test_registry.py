"""harness/registry.py: a taken name is a NameTakenError naming the family and the name; an entry
can be removed with its aliases (how the plugin loader undoes a plugin that failed its checks)."""

from __future__ import annotations

import pytest

from harness.registry import NameTakenError, Registry, UnknownNameError, did_you_mean


def test_a_taken_name_or_alias_names_the_family_and_registers_nothing():
    reg: Registry[int] = Registry("thing")
    reg.register("a", aliases=("alpha",))(1)
    for name, aliases in (("a", ()), ("b", ("alpha",)), ("b", ("c", "a"))):
        with pytest.raises(NameTakenError) as err:
            reg.register(name, aliases=aliases)(2)
        assert isinstance(err.value, ValueError) and err.value.family == "thing"
        assert str(err.value) == f"thing {err.value.name!r} is already registered"
    assert reg.names() == ["a"] and "b" not in reg and "c" not in reg


def test_unregister_removes_the_entry_its_aliases_and_its_version():
    reg: Registry[int] = Registry("thing")
    reg.register("a", aliases=("alpha", "al"), version=3)(1)
    reg.register("b", aliases=("beta",))(2)
    assert reg.aliases("al") == ["alpha", "al"] and reg.aliases("b") == ["beta"]
    reg.unregister("a")
    assert reg.names() == ["b"] and "alpha" not in reg and "al" not in reg
    with pytest.raises(UnknownNameError, match="no thing is registered as 'a'"):
        reg.unregister("a")
    with pytest.raises(UnknownNameError):
        reg.unregister("beta")  # an alias is not an entry
    reg.register("a", aliases=("alpha",))(5)  # the names are free again, at version 1
    assert reg.get("alpha") == 5 and reg.version("a") == 1


def test_did_you_mean_ignores_case_in_matching_but_not_in_what_it_suggests() -> None:
    """An id typed in a paper's capitals (``ARORA2023-MQAR``) found nothing: difflib compares case."""
    ids = ["arora2023-mqar", "press2022-alibi", "xiong2020-preln"]
    assert did_you_mean("ARORA2023-MQAR", ids) == " (did you mean 'arora2023-mqar'?)"
    assert did_you_mean("Press2022-ALiBi", ids) == " (did you mean 'press2022-alibi'?)"
    assert did_you_mean("RoPE", ["rope", "alibi"]) == " (did you mean 'rope'?)"
    assert did_you_mean("zzzz", ids) == ""


def test_a_declared_builtin_is_known_before_its_home_is_imported_and_loaded_by_get() -> None:
    reg: Registry[int] = Registry("thing", {"a": 1, "b": 2}, home="tests.fixtures.no_such_module")
    assert reg.names() == ["a", "b"] and reg.version("b") == 2 and "a" in reg  # no import
    with pytest.raises(NameTakenError):
        reg.register("a")(0)  # a plugin may not take a built-in's name
    with pytest.raises(ModuleNotFoundError, match="no_such_module"):
        reg.get("a")  # the first get imports the home module
    reg.builtin("a")(1)
    assert reg.get("a") == 1
    with pytest.raises(ValueError, match="not a declared built-in, or implemented twice"):
        reg.builtin("a")(1)
    with pytest.raises(ValueError, match="not a declared built-in"):
        reg.builtin("c")(3)
    with pytest.raises(UnknownNameError):
        reg.unregister("a")  # built-ins stay


def test_every_declared_component_is_implemented_and_run_ids_need_no_torch() -> None:
    import subprocess
    import sys

    import harness.modules  # noqa: F401 (implements the built-ins)
    from harness import registry

    families = ("POSITIONAL", "KERNELS", "MASK_FILLS", "QKV", "SCALES", "HEAD_SPLITS", "NORMS", "ACTIVATIONS")
    for reg in (getattr(registry, n) for n in (*families, "BLOCKS", "INITS")):
        assert reg.names() and all(reg.get(name) is not None for name in reg.names())
    code = (
        "import sys; from harness.experiment.versions import run_versions; "
        "v = run_versions({'model': {'position': 'rope'}, 'attention': {'kernel': 'flash'}}); "
        "assert v['position:rope'] == 2 and v['kernel:flash'] == 1, v; assert 'torch' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
