"""``python -m harness.bench ARGS`` is ``ablate bench attention ARGS``."""

import sys

from harness.cli.app import app


def main(argv: list[str] | None = None) -> None:
    """Run ``ablate bench attention`` with these arguments, under the program name ``python -m harness.bench``.

    Args:
        argv: the arguments after ``bench attention``; None takes this process's (``sys.argv[1:]``).
    """
    app(["bench", "attention", *(sys.argv[1:] if argv is None else argv)], prog_name="python -m harness.bench")


if __name__ == "__main__":
    main()
