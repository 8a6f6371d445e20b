"""``python -m harness.cli ARGS`` is ``ablate ARGS``."""

from harness.cli.app import app

app()
