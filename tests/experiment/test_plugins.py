"""The plugin loader (harness/experiment/plugins.py): what a plugin registers, where it comes from,
what a run record says of it, and every way loading one fails (one line naming the plugin and the
fix, the registries left as they were)."""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import sys
from pathlib import Path

import pytest
import yaml

from harness.errors import AblateError
from harness.experiment import plugins
from harness.experiment.ablation import load
from harness.experiment.plugins import families
from harness.modules import NORMS, POSITIONAL, SCALES
from harness.tasks import TASKS
from helpers.plugins import restored, unload, write_plugin
from helpers.tiny_grid import write_tiny

GOOD = """
@POSITIONAL.register("my_nope", aliases=("my_none",))
class MyNoPE(PositionalEncoding):
    '''No positional information.'''


@TASKS.register("my_task")
class MyTask(TASKS.get("copy")):
    name = "my_task"
"""


@pytest.fixture(autouse=True)
def _restored():
    with restored():
        yield


def _registries() -> dict[str, list[str]]:
    return {f.key: f.registry.names() for f in families()}


def test_a_plugin_file_registers_its_entries_and_says_which_code_it_is(tmp_path: Path) -> None:
    path = write_plugin(tmp_path / "mine.py", GOOD)
    (plugin,) = plugins.load_specs([str(path)], named_by="--plugin")
    assert "my_nope" in POSITIONAL and POSITIONAL.canonical("my_none") == "my_nope"
    assert TASKS.get("my_task").__name__ == "MyTask"
    assert plugin.entries == (("position", "my_nope"), ("task", "my_task"))
    assert plugins.origin("position", "my_nope") is plugin and plugins.origin("position", "rope") is None
    assert plugin.distribution is None and plugin.path == str(path)
    assert plugin.sha256 == hashlib.sha256(b"mine.py\0" + path.read_bytes() + b"\0").hexdigest()
    assert plugins.record() == [
        {
            "distribution": None,
            "version": None,
            "module": plugin.module,
            "entries": ["position:my_nope", "task:my_task"],
            "path": str(path),
            "sha256": plugin.sha256,
        }
    ]
    assert plugins.refs() == (plugins.PluginRef("file", str(path)),)


def test_a_plugin_named_twice_loads_once_and_unload_restores_the_registries(tmp_path: Path, monkeypatch) -> None:
    before = _registries()
    write_plugin(tmp_path / "pkg_once" / "__init__.py", GOOD)  # a second run of it would clash with itself
    monkeypatch.syspath_prepend(str(tmp_path))
    first = plugins.load_specs(["pkg_once"], named_by="--plugin")
    again = plugins.load_specs(["pkg_once"], named_by="x.yaml")
    assert first == again and len(plugins.loaded()) == 1
    assert first[0].path == str(tmp_path / "pkg_once")  # a package: its folder and all its .py files
    unload(first[0])
    assert _registries() == before and "pkg_once" not in sys.modules and plugins.loaded() == ()


def test_installed_plugins_are_discovered_by_entry_point_unless_autoload_is_off(tmp_path: Path, monkeypatch) -> None:
    write_plugin(tmp_path / "found_by_ep.py", GOOD)
    monkeypatch.syspath_prepend(str(tmp_path))
    eps = md.EntryPoints([md.EntryPoint(name="mine", value="found_by_ep", group=plugins.GROUP)])
    monkeypatch.setattr(plugins.md, "entry_points", lambda group: eps if group == plugins.GROUP else ())
    monkeypatch.setenv(plugins.AUTOLOAD_OFF, "1")
    assert plugins.load_for_command([]) == [] and "my_nope" not in POSITIONAL
    monkeypatch.setenv(plugins.AUTOLOAD_OFF, "0")
    (plugin,) = plugins.load_for_command([])
    assert plugin.ref == plugins.PluginRef("entry point", "mine") and plugin.module == "found_by_ep"
    assert "my_nope" in POSITIONAL
    assert plugins.load_refs(plugins.refs()) == [plugin]  # what a worker does: nothing new here


def test_an_ablation_file_loads_its_plugins_before_it_is_validated(tmp_path: Path) -> None:
    write_plugin(tmp_path / "decl" / "extra.py", GOOD)
    path = write_tiny(tmp_path / "decl", positions=("my_nope", "sinusoidal"))
    data = yaml.safe_load(path.read_text())
    path.write_text(yaml.safe_dump({**data, "plugins": ["extra.py"]}))  # relative to the file's folder
    abl = load(str(path))
    assert abl.plugins == ["extra.py"] and abl.axes["model.position"] == ["my_nope", "sinusoidal"]
    assert plugins.loaded()[0].ref.target == str(tmp_path / "decl" / "extra.py")


CLASH_BUILT_IN = """
@POSITIONAL.register("fine_one")
class Fine(PositionalEncoding):
    pass


@POSITIONAL.register("rope")
class MyRope(PositionalEncoding):
    pass
"""


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (CLASH_BUILT_IN, ["positional encoding 'rope' is already registered by ablate (built in)", "e.g. 'bad_rope'"]),
        (
            "@NORMS.register('mine', aliases=('layernorm',))\nclass N(torch.nn.Module): pass\n",
            ["norm 'layernorm' is already registered by ablate (built in)"],
        ),
        (
            "POSITIONAL.register('twice')(PositionalEncoding)\nPOSITIONAL.register('twice')(PositionalEncoding)\n",
            ["positional encoding 'twice' is registered twice by this plugin; register each name (and alias) once"],
        ),
        (
            "@POSITIONAL.register('plain')\nclass Plain:\n    pass\n",
            [
                "positional encoding 'plain' is the class Plain, not a subclass of PositionalEncoding",
                "derive it from harness.plugin.PositionalEncoding",
            ],
        ),
        (
            "@TASKS.register('not_a_task')\nclass NotATask(PositionalEncoding):\n    pass\n",
            ["task 'not_a_task' is the class NotATask, not a subclass of Task"],
        ),
        (
            "@SCALES.register('as_class')\nclass Scale:\n    pass\n",
            ["attention scale 'as_class' is the class Scale, not a function"],
        ),
        (
            "x = undefined_name + 1\n",
            ["importing it raised NameError: name 'undefined_name' is not defined (bad.py, line 2)", "fix the plugin"],
        ),
        (
            "import not_a_real_dependency\n",
            ["No module named 'not_a_real_dependency' (bad.py, line 2)", "install what it imports"],
        ),
        ("def broken(:\n", ["importing it raised SyntaxError", "(bad.py, line 2)"]),
    ],
)
def test_a_plugin_that_fails_is_one_line_and_leaves_no_entry(tmp_path: Path, body: str, words: list[str]) -> None:
    before = _registries()
    path = write_plugin(tmp_path / "bad.py", "import torch\n" + body if "torch" in body else body)
    with pytest.raises(AblateError) as err:
        plugins.load_specs([str(path)], named_by="--plugin")
    message = str(err.value)
    assert message.startswith(f"--plugin {path}: ") and "\n" not in message
    for w in words:
        assert w in message, (w, message)
    assert _registries() == before and plugins.loaded() == ()


def test_a_name_another_plugin_holds_names_that_plugin(tmp_path: Path) -> None:
    first = write_plugin(tmp_path / "first.py", GOOD)
    second = write_plugin(tmp_path / "second.py", GOOD)
    plugins.load_specs([str(first)], named_by="--plugin")
    with pytest.raises(
        AblateError,
        match=r"'my_nope' is already registered by plugin first\.py \(sha256 .*"
        r"\(--plugin .*first\.py\); rename one of the two",
    ):
        plugins.load_specs([str(second)], named_by="--plugin")
    assert [p.ref.target for p in plugins.loaded()] == [str(first)]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            "no_such_module_xyz",
            "--plugin no_such_module_xyz: no module named 'no_such_module_xyz'; install the package",
        ),
        ("missing.py", "missing.py: no such file; pass an existing .py file or an importable module"),
        ("my-pkg", "--plugin 'my-pkg': not a module name (e.g. my_pkg.ablate_plugin) nor a path to a .py file"),
    ],
)
def test_a_plugin_that_cannot_be_found(spec: str, message: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(AblateError) as err:
        plugins.load_specs([spec], named_by="--plugin")
    assert message in str(err.value)


def test_an_entry_point_that_names_an_object_or_is_missing_where_a_worker_runs(tmp_path: Path, monkeypatch) -> None:
    eps = md.EntryPoints([md.EntryPoint(name="obj", value="found_by_ep:register", group=plugins.GROUP)])
    monkeypatch.setattr(plugins.md, "entry_points", lambda group: eps)
    monkeypatch.delenv(plugins.AUTOLOAD_OFF)
    with pytest.raises(
        AblateError,
        match=r"names an object; .* the module whose import registers the entries: "
        r"obj = 'found_by_ep'",
    ):
        plugins.load_for_command([])
    with pytest.raises(AblateError, match=r"entry point 'gone' in ablate.plugins is not installed where"):
        plugins.load_refs([plugins.PluginRef("entry point", "gone")])


@pytest.mark.parametrize("value", ["extra.py", [1], [""]])
def test_an_ablation_file_whose_plugins_is_not_a_list_of_names(tmp_path: Path, value) -> None:
    path = write_tiny(tmp_path / "decl")
    path.write_text(yaml.safe_dump({**yaml.safe_load(path.read_text()), "plugins": value}))
    with pytest.raises(AblateError, match=r"tiny\.yaml: plugins must be a list of module names or \.py paths"):
        load(str(path))


def test_a_scale_function_and_a_norm_class_are_accepted(tmp_path: Path) -> None:
    path = write_plugin(
        tmp_path / "fns.py",
        """
        import torch

        SCALES.register("half")(lambda d_model, n_heads: 0.5)
        NORMS.register("my_layernorm")(torch.nn.LayerNorm)
        """,
    )
    (plugin,) = plugins.load_specs([str(path)], named_by="--plugin")
    assert plugin.entries == (("scale", "half"), ("norm", "my_layernorm"))
    assert SCALES.get("half")(64, 4) == 0.5 and NORMS.get("my_layernorm") is not None


def test_an_ablation_file_names_the_plugin_it_cannot_load(tmp_path: Path) -> None:
    path = write_tiny(tmp_path / "decl")
    path.write_text(yaml.safe_dump({**yaml.safe_load(path.read_text()), "plugins": ["gone.py"]}))
    with pytest.raises(AblateError) as err:
        load(str(path))
    assert str(err.value) == (
        f"plugins: {tmp_path / 'decl' / 'gone.py'} (in tiny.yaml): no such file; "
        "pass an existing .py file or an importable module"
    )


def _install(site: Path, dist: str, module: str, name: str) -> None:
    """Distribution ``dist`` as pip leaves it in ``site``: ``module.py`` registering the position
    ``name``, and a dist-info whose ablate.plugins entry point ``shared`` names the module."""
    write_plugin(site / f"{module}.py", f'@POSITIONAL.register("{name}")\nclass P(PositionalEncoding):\n    pass\n')
    info = site / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{plugins.GROUP}]\nshared = {module}\n")


def test_two_distributions_declaring_one_entry_point_name_both_load(tmp_path: Path, monkeypatch) -> None:
    # one was dropped silently (which one: the sys.path order); `ablate check` then offered the other's name
    _install(tmp_path / "site_a", "ablate-pos-a", "pos_a_plugin", "pos_a")
    _install(tmp_path / "site_b", "ablate-pos-b", "pos_b_plugin", "pos_b")
    monkeypatch.syspath_prepend(str(tmp_path / "site_a"))
    monkeypatch.syspath_prepend(str(tmp_path / "site_b"))
    monkeypatch.setenv(plugins.AUTOLOAD_OFF, "0")
    mine = [p for p in plugins.load_for_command([]) if p.ref.target == "shared"]
    assert [(p.distribution, p.entries) for p in mine] == [
        ("ablate-pos-a", (("position", "pos_a"),)),
        ("ablate-pos-b", (("position", "pos_b"),)),
    ]
    assert "pos_a" in POSITIONAL and "pos_b" in POSITIONAL
    assert [r.distribution for r in plugins.refs() if r.target == "shared"] == ["ablate-pos-a", "ablate-pos-b"]
    assert plugins.load_refs(plugins.refs())[-2:] == mine  # a worker: each from its own distribution


def test_two_distributions_whose_entry_points_import_one_module_are_refused(tmp_path: Path, monkeypatch) -> None:
    _install(tmp_path / "site_a", "ablate-pos-a", "pos_same_plugin", "pos_a")
    _install(tmp_path / "site_b", "ablate-pos-b", "pos_same_plugin", "pos_b")  # only the first on the path imports
    monkeypatch.syspath_prepend(str(tmp_path / "site_a"))
    monkeypatch.syspath_prepend(str(tmp_path / "site_b"))
    monkeypatch.setenv(plugins.AUTOLOAD_OFF, "0")
    with pytest.raises(AblateError) as err:
        plugins.load_for_command([])
    message = str(err.value)
    assert "importing module 'pos_same_plugin'" in message and "uninstall one" in message
    assert "ablate-pos-a (entry point 'shared')" in message and "ablate-pos-b (entry point 'shared')" in message
    assert "pos_a" not in POSITIONAL and "pos_b" not in POSITIONAL
