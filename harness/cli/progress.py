"""The live progress of ``ablate run``: one line per run in flight, read from the progress files the runs write.

:class:`GridProgress` shows it; in a terminal with rich's live display and a bar, piped as a plain line now and then.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn, TimeRemainingColumn
from rich.text import Text

from harness.store.runs import run_dir
from harness.training.progress import EVERY_S, RunProgress, read_progress

POLL_S = EVERY_S
PLAIN_EVERY_S = 30.0  # seconds between two plain progress lines when the output is not a terminal
PROGRESS_STALE_S = 120.0  # a progress file older than this is an attempt that died, not a run in flight


def clock(seconds: float | None) -> str:
    """``3m05s``; ``?`` when unknown."""
    if seconds is None:
        return "?"
    m, s = divmod(int(seconds + 0.5), 60)
    return f"{m}m{s:02d}s"


def describe(label: str, progress: RunProgress) -> str:
    """``copy sinusoidal s0 1200/3000 loss 1.234 ETA 0m40s`` (``testing`` after the last step)."""
    loss = f" loss {progress.loss:.4g}" if progress.loss is not None else ""
    left = "testing" if progress.step >= progress.total else f"ETA {clock(progress.eta_s())}"
    return f"{label} {progress.step}/{progress.total}{loss} {left}"


class GridProgress:
    """The live progress of ``specs`` on ``console``, a context manager; :meth:`finished` per run.

    The first ``4 x workers`` (at least 16) unfinished runs are polled from their ``progress.json``
    (:mod:`harness.training.progress`): those an executor starts first. In a terminal, rich's live display; piped, a
    plain line every ``PLAIN_EVERY_S`` seconds.

    Args:
        console: where the progress is shown.
        specs: the runs to watch (their ``run_id``, task, variant and seed), in the order an executor starts them.
        results: the run store their folders lie in.
        workers: the runs at once; sets how many runs are polled.
        poll_s: seconds between two polls (default :data:`POLL_S`).
        plain_every_s: seconds between two plain lines when not in a terminal (default :data:`PLAIN_EVERY_S`).
    """

    def __init__(
        self,
        console: Console,
        specs: Sequence[Any],
        results: Path,
        workers: int = 1,
        *,
        poll_s: float | None = None,
        plain_every_s: float | None = None,
    ) -> None:
        self.console = console
        self.poll_s = POLL_S if poll_s is None else poll_s
        self.plain_every_s = PLAIN_EVERY_S if plain_every_s is None else plain_every_s
        self._pending = {  # in order: a dict keeps it as runs leave
            s.run_id: (f"{s.task} {s.variant_label} s{s.seed}", run_dir(results, s.ablation, s.profile, s.run_id))
            for s in specs
        }
        self._window = max(16, 4 * workers)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._live: Live | None = None
        self._bar: Progress | None = None
        self.lines: list[str] = []  # the runs in flight at the last poll, as shown

    def __enter__(self) -> GridProgress:
        if not self._pending:
            return self
        if self.console.is_terminal:
            columns = (BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), "ETA", TimeRemainingColumn())
            self._bar = Progress("runs", *columns, console=self.console)
            self._bar.add_task("grid", total=len(self._pending))
            self._live = Live(self._renderable(), console=self.console, transient=True, refresh_per_second=1)
            self._live.__enter__()
        self._thread = threading.Thread(target=self._watch, name="ablate-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._live is not None:
            self._live.__exit__(*exc)

    def finished(self, run_id: str) -> None:
        """Count the run ``run_id`` as done: it is polled no more and, in a terminal, the bar advances."""
        with self._lock:
            self._pending.pop(run_id, None)
        if self._bar is not None:
            self._bar.advance(self._bar.task_ids[0])

    def poll(self) -> list[str]:
        """The lines of the polled runs with a fresh ``progress.json``, read now; kept as :attr:`lines`."""
        with self._lock:
            window = list(self._pending.values())[: self._window]
        found = ((label, read_progress(folder, stale_s=PROGRESS_STALE_S)) for label, folder in window)
        self.lines = [describe(label, progress) for label, progress in found if progress is not None]
        return self.lines

    def _renderable(self) -> Group:  # in a terminal only: with the bar
        return Group(self._bar, *(Text.from_markup(f"  [dim]{escape(line)}[/]") for line in self.lines))

    def _watch(self) -> None:
        last_plain = time.monotonic()
        while not self._stop.wait(self.poll_s):
            lines = self.poll()
            if self._live is not None:
                self._live.update(self._renderable())
            elif lines and time.monotonic() - last_plain >= self.plain_every_s:
                last_plain = time.monotonic()
                self.console.print(f"running {len(lines)}: " + " | ".join(lines), markup=False, highlight=False)
