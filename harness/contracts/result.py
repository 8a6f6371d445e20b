"""What a check returns: one :class:`ContractResult` per contract, gathered in a :class:`CheckReport`.

A ``fail`` makes ``ablate check`` exit 1; ``refused`` is not a failure (the harness refuses such a run before it
starts); ``skipped``: an earlier contract it needs failed. No torch here: the command line formats a report without
it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

Status = Literal["pass", "fail", "refused", "skipped"]


class ContractFailed(Exception):
    """Raised inside a contract: the component or task breaks it; the message says where."""


class Refused(Exception):
    """Raised inside a contract: the component declares, before any run, that it cannot do this."""


@dataclass(frozen=True)
class ContractResult:
    """The outcome of one contract: its name, status, a line for people, its seconds and numbers for machines."""

    contract: str  # its name: causality, finite fp16, ...
    status: Status
    detail: str  # one line for people: what was measured, or what broke and where
    seconds: float
    data: dict[str, Any] = field(default_factory=dict)  # numbers for machines (--format json)


@dataclass(frozen=True)
class CheckReport:
    """Every contract of one component or task, in the order they ran."""

    target: str  # as ablate check names it: model.position=rope, task=copy
    kind: Literal["component", "task"]
    version: str  # the registry's code version of a component, the version of a task
    results: tuple[ContractResult, ...]

    @property
    def failed(self) -> list[ContractResult]:
        """The results whose status is ``fail``, in order; the report is ok when there are none."""
        return [r for r in self.results if r.status == "fail"]

    @property
    def seconds(self) -> float:
        """The time every contract took, added up, in seconds."""
        return sum(r.seconds for r in self.results)

    def to_dict(self) -> dict[str, Any]:
        """The report as plain data (``--format json``): its fields, ``ok``, the total seconds and each contract's.

        Seconds are rounded to 0.1 ms.
        """
        head = {"target": self.target, "kind": self.kind, "version": self.version, "ok": not self.failed}
        contracts = [{**vars(r), "seconds": round(r.seconds, 4)} for r in self.results]
        return head | {"seconds": round(self.seconds, 4), "contracts": contracts}


Passed = str | tuple[str, dict[str, Any]]
"""What a contract function returns when it passes: the detail, or the detail and its data."""


def run_contract(contract: str, fn: Callable[..., Passed], *args: Any) -> ContractResult:
    """Run one contract function and time it.

    Its return value is a pass, :class:`Refused` a refusal, :class:`ContractFailed` a failure with its message, any
    other exception a failure that names it (a component that raises where it should compute breaks the contract).
    """
    start = time.perf_counter()
    data: dict[str, Any] = {}
    try:
        out = fn(*args)
        detail, data = out if isinstance(out, tuple) else (out, {})
        status: Status = "pass"
    except (Refused, ContractFailed) as exc:
        status, detail = "refused" if isinstance(exc, Refused) else "fail", str(exc)
    except Exception as exc:  # noqa: BLE001 - any error of the component under test is its failure
        first = (str(exc).strip().splitlines() or [""])[0][:300]
        status, detail = "fail", f"raised {type(exc).__name__}" + (f": {first}" if first else "")
    return ContractResult(contract, status, detail, time.perf_counter() - start, data)


def skipped(contracts: Iterable[str], why: str) -> list[ContractResult]:
    """A ``skipped`` result for each of ``contracts``: ``why``, the earlier contract they need failed."""
    return [ContractResult(c, "skipped", why, 0.0) for c in contracts]
