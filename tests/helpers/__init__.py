"""Helpers shared by test modules (imported as ``helpers.NAME``; tests/ is on sys.path through
tests/conftest.py). Test modules never import each other."""


def contract_result(report, name: str):
    """The result of contract ``name`` in a check report; ``KeyError`` if no such contract ran."""
    return {r.contract: r for r in report.results}[name]
