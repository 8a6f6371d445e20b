"""Helpers shared by test modules (imported as ``helpers.NAME``; tests/ is on sys.path through
tests/conftest.py). Test modules never import each other."""
