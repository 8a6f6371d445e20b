"""Errors the CLI turns into one clear message and exit code 2 (bad input, before any run)."""


class AblateError(Exception):
    """Bad input: an unknown name, an ill-typed override, an impossible evaluation length, a
    missing data file. Raised before any run starts; the CLI prints it and exits with code 2."""
