"""Contracts every registered component and task must meet, run by the repository's tests and ``ablate check NAME``.

Both alike, with one implementation (docs/INTERFACES.md: contracts): :func:`.components.check` runs a target
(:mod:`.targets`) through :mod:`.components` or :mod:`.tasks`, each contract's outcome a :mod:`.result`.
"""
