"""``python -m harness.bench ARGS`` is ``ablate bench attention ARGS``.

The help and messages name the program ``python -m harness.bench``.
"""

import sys

from harness.cli.app import app

if __name__ == "__main__":
    app(["bench", "attention", *sys.argv[1:]], prog_name="python -m harness.bench")
