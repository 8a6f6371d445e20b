"""The example plugin installed for real: a throwaway venv (it sees this environment's packages
through a .pth file listing its site-packages folders), ``pip install -e examples/plugin`` into it (no network: no
dependencies, no build isolation), then ``ablate list`` there shows the plugin's entries marked with its
distribution and version, found through its entry point alone. About 20 s."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.install
def test_pip_install_then_ablate_list_shows_the_entries(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    parent = [p for p in sys.path if p.endswith("site-packages")] or [sysconfig.get_paths()["purelib"]]
    Path(site, "_parent_env.pth").write_text("\n".join(parent) + "\n")  # this environment's packages
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-build-isolation"]
    done = subprocess.run([*pip, "-e", str(ROOT / "examples" / "plugin")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("ABLATE_DISABLE_PLUGIN_AUTOLOAD", None)
    listed = subprocess.run([str(python), "-m", "harness.cli", "list"], env=env, capture_output=True, text=True)
    assert listed.returncode == 0, listed.stderr
    out = listed.stdout
    assert "task lag_copy [ablate-example-plugin 0.1.0] (v1, synthetic)" in out
    assert (
        "position (model.position): sinusoidal, learned, learned_clamp, rope, alibi, nope, learned_n01, "
        "t5_bias [ablate-example-plugin 0.1.0]" in out
    )
    assert (
        "plugin ablate-example-plugin 0.1.0 (entry point 'example' in ablate.plugins): position t5_bias, task lag_copy"
        in out
    )
    env["ABLATE_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    off = subprocess.run([str(python), "-m", "harness.cli", "list"], env=env, capture_output=True, text=True)
    assert off.returncode == 0 and "lag_copy" not in off.stdout
