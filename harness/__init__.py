"""ablate: controlled, repeated, statistically honest ablations of Transformer design choices.

In a source checkout the search path also holds the repository root, so that ``tasks/`` and
``ablations/`` import as ``harness.tasks`` and ``harness.ablations`` (why: docs/ARCHITECTURE.md).
"""

import os

__version__ = "0.1.0"

_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if not os.path.isdir(os.path.join(__path__[0], "tasks")) and os.path.isfile(
    os.path.join(_root, "tasks", "__init__.py")
):
    __path__.append(_root)
del _root
