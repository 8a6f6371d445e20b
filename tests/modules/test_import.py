"""harness.modules is pure torch: it imports with Lightning unavailable."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import sys
sys.modules["lightning"] = None
sys.modules["pytorch_lightning"] = None
import harness.modules as m
cfg = m.TransformerConfig(vocab_size=5, d_model=8, n_heads=2, n_layers=1)
m.TransformerLM(cfg)
blocked = ("lightning", "pytorch_lightning")
loaded = [k for k, v in sys.modules.items() if v is not None and k.split(".")[0] in blocked]
assert not loaded, loaded
print("ok")
"""


def test_import_without_lightning():
    cmd = [sys.executable, "-c", SCRIPT]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
