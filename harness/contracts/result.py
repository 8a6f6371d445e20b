"""What a check returns: one :class:`ContractResult` per contract, gathered in a :class:`CheckReport`.

A contract ends in one of four statuses:

- ``pass``: the component or task meets it;
- ``fail``: it does not (or raised); ``ablate check`` then exits with 1;
- ``refused``: the component declares beforehand that it cannot do this (a kernel's
  ``check_available`` refusing a dtype, a positional encoding's ``max_positions`` below the length),
  so the harness refuses such a run before it starts: not a failure;
- ``skipped``: not run because an earlier contract it needs failed (the model could not be built,
  the task's data is missing).

Pure Python (no torch), so that the command line can format a report without importing torch.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

Status = Literal["pass", "fail", "refused", "skipped"]
STATUSES: tuple[Status, ...] = ("pass", "fail", "refused", "skipped")


class ContractFailed(Exception):
    """Raised inside a contract: the component or task breaks it; the message says where."""


class Refused(Exception):
    """Raised inside a contract: the component declares, before any run, that it cannot do this."""


@dataclass(frozen=True)
class ContractResult:
    """The outcome of one contract.

    Attributes:
        contract: its name (``causality``, ``finite fp16``, ...).
        status: ``pass``, ``fail``, ``refused`` or ``skipped``.
        detail: one line for people: what was measured, or what broke and where.
        seconds: wall time of the contract.
        data: numbers for machines (``--format json``), e.g. the first offending position.
    """

    contract: str
    status: Status
    detail: str
    seconds: float
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {**vars(self), "seconds": round(self.seconds, 4)}


@dataclass(frozen=True)
class CheckReport:
    """Every contract of one component or task.

    Attributes:
        target: what was checked, as ``ablate check`` names it (``model.position=rope``, ``task=copy``).
        kind: ``component`` or ``task``.
        version: the registry's code version of a component, the ``version`` of a task.
        results: one per contract, in the order they ran.
    """

    target: str
    kind: Literal["component", "task"]
    version: str
    results: tuple[ContractResult, ...]

    @property
    def failed(self) -> list[ContractResult]:
        """The contracts with status ``fail``."""
        return [r for r in self.results if r.status == "fail"]

    @property
    def seconds(self) -> float:
        return sum(r.seconds for r in self.results)

    def result(self, contract: str) -> ContractResult:
        """The result of ``contract``; ``KeyError`` if no such contract ran."""
        for r in self.results:
            if r.contract == contract:
                return r
        raise KeyError(f"{self.target}: no contract {contract!r}; ran {[r.contract for r in self.results]}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "kind": self.kind,
            "version": self.version,
            "ok": not self.failed,
            "seconds": round(self.seconds, 4),
            "contracts": [r.to_dict() for r in self.results],
        }


Passed = str | tuple[str, dict[str, Any]]
"""What a contract function returns when it passes: the detail, or the detail and its data."""


def run_contract(contract: str, fn: Callable[..., Passed], *args: Any, **kwargs: Any) -> ContractResult:
    """Run one contract function and time it: its return value is a pass, :class:`Refused` a
    refusal, :class:`ContractFailed` a failure with its message, any other exception a failure
    that names it (a component that raises where it should compute breaks the contract)."""
    start = time.perf_counter()
    data: dict[str, Any] = {}
    try:
        out = fn(*args, **kwargs)
        detail, data = out if isinstance(out, tuple) else (out, {})
        status: Status = "pass"
    except Refused as exc:
        status, detail = "refused", str(exc)
    except ContractFailed as exc:
        status, detail = "fail", str(exc)
    except Exception as exc:  # noqa: BLE001 - any error of the component under test is its failure
        status, detail = "fail", f"raised {describe(exc)}"
    return ContractResult(contract, status, detail, time.perf_counter() - start, data)


def skipped(contract: str, why: str) -> ContractResult:
    return ContractResult(contract, "skipped", why, 0.0)


def describe(exc: BaseException) -> str:
    """``Type: first line of the message`` (at most 300 characters)."""
    text = str(exc).strip()
    first = text.splitlines()[0][:300] if text else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__
