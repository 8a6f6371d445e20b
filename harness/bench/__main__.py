"""``python -m harness.bench ARGS`` is ``ablate bench attention ARGS``."""

import sys

from harness.cli.app import app


def main(argv: list[str] | None = None) -> None:
    app(["bench", "attention", *(sys.argv[1:] if argv is None else argv)], prog_name="python -m harness.bench")


if __name__ == "__main__":
    main()
