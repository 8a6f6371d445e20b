"""ablate: controlled, repeated, statistically honest ablations of Transformer design choices.

The repository keeps ``tasks/`` and ``ablations/`` at its top level, but
their import names are ``harness.tasks`` and ``harness.ablations``: generic top-level names would be
shadowed by a user's own ``tasks`` module in the working directory, or clash with a plugin's. An
installed wheel holds them under ``harness/`` (``package-dir`` in pyproject.toml); in a source
checkout (``PYTHONPATH`` at the repository, or an editable install) this package's search path
also holds the repository root, where the import system then finds them.
"""

import os

__version__ = "0.1.0"

_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if not os.path.isdir(os.path.join(__path__[0], "tasks")) and os.path.isfile(
    os.path.join(_root, "tasks", "__init__.py")
):
    __path__.append(_root)
del _root
