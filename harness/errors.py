"""The harness's own exceptions, and how a stored run ended.

The exceptions: bad input (:class:`AblateError`: exit code 2, before any run), and how a training run that stopped
before its end ended (:class:`RunError`). How a run ended: :class:`RunStatus`, ``stalled`` told by :func:`stall_reason`.
"""

from __future__ import annotations

import errno
import math
from collections.abc import Mapping
from enum import Enum
from typing import Any, ClassVar

from pydantic import ValidationError

from harness.redact import redact


class TextEnum(str, Enum):
    """A state that reads, prints, hashes and is written as its text: ``ok``, not ``RunStatus.OK``.

    The base of :class:`RunStatus` and of a control's outcome (:class:`harness.analysis.claims.ControlOutcome`).
    """

    __str__, __format__, __hash__ = str.__str__, str.__format__, str.__hash__


class RunStatus(TextEnum):
    """How a stored run ended: its record's ``status``, which reads, prints, hashes and is written as its text (``ok``).

    A record written before ``stalled`` existed reads as it was stored.
    """

    OK = "ok"
    """Trained to its end and evaluated."""
    STALLED = "stalled"
    """Trained to its end and evaluated, but its validation loss never got clear of its task's chance level
    (:func:`stall_reason`): not finished in the outcome table, as a diverged run; its metrics are kept in its record
    and compared, flagged (docs/statistics.md, "Outcomes")."""
    DIVERGED = "diverged"
    """Its training loss became NaN or inf (:class:`Diverged`)."""
    FAILED = "failed"
    """An exception stopped it (:class:`RunFailed`)."""
    TIMEOUT = "timeout"
    """It went over its ``--run-timeout`` (:class:`TimedOut`)."""

    @property
    def trained(self) -> bool:
        """Trained to its end and evaluated (ok, stalled): its metrics and validation history are whole, compared."""
        return self in (RunStatus.OK, RunStatus.STALLED)

    @property
    def failure(self) -> bool:
        """Did not finish (failed, timeout): ``ablate run`` exits with 1, and may depend on the machine."""
        return self in (RunStatus.FAILED, RunStatus.TIMEOUT)

    @property
    def result(self) -> bool:
        """An outcome (ok, stalled, diverged): not run again unless ``--retry`` names it, reused by other ablations."""
        return not self.failure


TRAINED = tuple(s for s in RunStatus if s.trained)
"""The :attr:`RunStatus.trained` statuses, for a column of them: ``runs["status"].isin(TRAINED)``."""


class AblateError(Exception):
    """Bad input, raised before any run starts; the CLI prints it and exits with code 2."""


def first_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message, else its type's name.

    A pydantic ``ValidationError``'s is its first error and where it lies (``complete: Input should be a valid
    integer``), not its first line (``1 validation error for Record``).
    """
    if isinstance(exc, ValidationError) and (errors := exc.errors()):
        where = ".".join(map(str, errors[0]["loc"]))
        return f"{where}: {pydantic_message(errors[0])}" if where else pydantic_message(errors[0])
    return (str(exc).splitlines() or [type(exc).__name__])[0]


def pydantic_message(error: Mapping[str, Any]) -> str:
    """The message of one error of a pydantic ``ValidationError`` (an item of its ``errors()``).

    A validator's own ``ValueError`` comes without the ``Value error, `` pydantic puts before it.
    """
    return str(error["msg"]).removeprefix("Value error, ")


class RunError(RuntimeError):
    """A training run that stopped before its end.

    It holds its ``status`` (``diverged``, ``timeout`` or ``failed``, as its record holds it), and the ``metrics``
    measured before (the probes at init).

    Args:
        reason: why the run stopped: the exception's message.
        metrics: the metrics measured before it stopped, by name.
    """

    status: ClassVar[RunStatus] = RunStatus.FAILED

    def __init__(self, reason: str, metrics: Mapping[str, float] | None = None) -> None:
        super().__init__(reason)
        self.metrics: dict[str, float] = dict(metrics or {})

    @property
    def reason(self) -> str:
        """Why the run stopped: the exception's message."""
        return str(self)

    def fields(self) -> dict[str, Any]:
        """What the run's record holds of how it ended: ``status``, ``reason`` and ``metrics``."""
        return {"status": self.status, "reason": self.reason, "metrics": self.metrics}


class Diverged(RunError):
    """The training loss became NaN or inf at ``step``, after ``last_finite``."""

    status = RunStatus.DIVERGED

    def __init__(self, step: int, last_finite: float | None) -> None:
        super().__init__(f"non-finite training loss at step {step} (last finite loss: {last_finite})")
        self.step, self.last_finite = step, last_finite

    def fields(self) -> dict[str, Any]:
        """:meth:`RunError.fields`, with ``diverged_step`` and ``last_finite_loss`` added."""
        return {**super().fields(), "diverged_step": self.step, "last_finite_loss": self.last_finite}


class TimedOut(RunError):
    """The run went over its ``--run-timeout`` and was stopped; its record holds no metrics."""

    status = RunStatus.TIMEOUT

    def __init__(self, step: int, elapsed: float, limit: float) -> None:
        super().__init__(f"stopped after {elapsed:.1f} s at step {step} (run timeout {limit:g} s)")
        self.step, self.elapsed, self.limit = step, elapsed, limit

    def fields(self) -> dict[str, Any]:
        """``status``, ``reason``, ``timeout_step`` and ``run_timeout_s`` (seconds) for the record; no metrics."""
        return {"status": self.status, "reason": self.reason, "timeout_step": self.step, "run_timeout_s": self.limit}


class RunFailed(RunError):
    """Any other exception of a run (``cause``); the reason is its type and message, secrets redacted."""

    def __init__(self, cause: BaseException, metrics: Mapping[str, float] | None = None) -> None:
        super().__init__(redact(f"{type(cause).__name__}: {cause}"), metrics)
        self.__cause__ = cause


STALL_FRACTION = 0.1
"""How far below its task's chance-level loss (a fraction of it) a run's best validation loss must
get to count as learned: a run is stalled while ``best > (1 - STALL_FRACTION) x chance``. Why a
tenth: docs/statistics.md, "Outcomes" (the noise of the estimate and the split's own shift are
under 1 % of the chance level; runs that learned nothing sat within 2 % of it, those that learned
at least 20 % below it)."""


def stall_reason(best_loss: float | None, step: int | None, chance_loss: float | None, basis: str = "") -> str | None:
    """Why a run that trained to its end is ``stalled``, or None when it learned (or when it cannot be told).

    It cannot be told with no finite validation loss, or for a task that states no chance level.

    Args:
        best_loss: the lowest validation loss of the run (nats per scored token), over its passes.
        step: the step of that validation pass.
        chance_loss: the task's chance-level loss (:attr:`harness.tasks.Task.chance`).
        basis: how the chance level is defined, in words (for the reason).

    Returns:
        ``validation loss never got clear of chance: best 3.27 nats/token (step 350) > 2.98 = 0.9 x the
        chance level 3.31 (...)``
        when ``best_loss > (1 - STALL_FRACTION) x chance_loss``, else None.
    """
    if best_loss is None or chance_loss is None or not math.isfinite(best_loss) or not math.isfinite(chance_loss):
        return None
    bar = (1 - STALL_FRACTION) * chance_loss
    if best_loss <= bar:
        return None
    at = f" (step {step})" if step is not None else ""
    how = f" ({basis})" if basis else ""
    return (
        f"validation loss never got clear of chance: best {best_loss:.4g} nats/token{at} > {bar:.4g} = "
        f"{1 - STALL_FRACTION:g} x the chance level {chance_loss:.4g}{how}"
    )


def run_error(exc: BaseException) -> RunError:
    """How a run or trial that raised ``exc`` ended: ``exc`` itself, or a :class:`RunFailed` of it."""
    return exc if isinstance(exc, RunError) else RunFailed(exc)


STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EACCES, errno.EPERM, errno.EROFS})
"""OSErrors of the storage, not of the run: a full disk, a quota, the file-size limit, a permission."""


def storage_error(exc: BaseException) -> OSError | None:
    """The storage error (:data:`STORAGE_ERRNOS`) that ``exc`` is or was raised from, or None.

    Raised from: its cause or context, as Lightning or fsspec re-raise it. A run that meets one did not fail: it
    stopped, and resumes once the storage has room or rights again.
    """
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in STORAGE_ERRNOS:
            return exc
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return None
