"""What the command modules share: the console, the command's :class:`Selection`, and the checks of its paths.

The console (``output.console``) is looked up at call time, so that a test can replace it once for every command; the
paths a command is given are checked before anything is read or written.
"""

from __future__ import annotations

import codecs
import errno
import os
import shlex
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from harness.credentials import has_wandb_credentials
from harness.encode import count
from harness.errors import AblateError
from harness.files import data_dir
from harness.hints import DEFAULT_RESULTS
from harness.tuned import TUNED, tuned_profile

if TYPE_CHECKING:
    from harness.experiment.ablation import Ablation
    from harness.experiment.grid import RunSpec
    from harness.experiment.selection import Selection


class _Console(Console):
    """Rich's console, but a closed stdout pipe is left to ``harness.cli.app`` (exit 141, not rich's 1).

    A display thread (``ablate run``'s progress) stops without a word.
    """

    def on_broken_pipe(self) -> None:
        if threading.current_thread() is threading.main_thread():
            raise BrokenPipeError(errno.EPIPE, "stdout was closed by its reader")


def replace_unencodable(*streams: Any) -> None:
    """Let ``streams`` (stdout, stderr) whose encoding is not UTF-8 write ``?`` for a character they cannot encode.

    Such a stream (a Latin-1 or C locale) writes ``?`` for ``Δ``, ``—`` instead of raising UnicodeEncodeError, which
    crashed ``ablate run`` after its grid had trained; files are written in UTF-8 whatever the locale.
    """
    for stream in streams:
        encoding = getattr(stream, "encoding", None) or "utf-8"
        if codecs.lookup(encoding).name != "utf-8" and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")


replace_unencodable(sys.stdout, sys.stderr)
# Piped or captured: a wide virtual terminal (tables not squeezed to 80 columns), lines left whole; a
# terminal: its own width, long lines wrapped between words (not `ETA 5` / `m14s`).
console = _Console(highlight=False, soft_wrap=not sys.stdout.isatty(), width=None if sys.stdout.isatty() else 160)


def plain(text: Any) -> None:
    """Print ``text`` on the console as it is: no rich markup is read in it (a command line's ``[..]``, a path)."""
    console.print(text, markup=False)


def check_results_dir(results: Path, create: bool = True) -> None:
    """For the commands that write the store: a results path that is a file, cannot be created or written.

    ``create=False``: only refuse a file (a command that may still refuse checks again).
    """
    if results.exists() and not results.is_dir():
        raise AblateError(f"--results-dir {results} exists and is not a folder; pass a folder path")
    if not create:
        return
    try:
        results.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise AblateError(f"cannot create --results-dir {results}: {exc.strerror}") from None
    if not os.access(results, os.W_OK):
        raise AblateError(f"--results-dir {results} is not writable; pass a folder you can write to")


def check_out(out: Path, what: str) -> None:
    """An ``--out`` that is a file or lies under one (``what``: what it is for)."""
    if out.exists() and not out.is_dir():
        raise AblateError(f"--out {out} exists and is not a folder; pass a folder for the {what}")
    blocker = next((p for p in out.absolute().parents if p.exists()), None)
    if blocker is not None and not blocker.is_dir():
        raise AblateError(f"cannot create --out {out}: {blocker} is a file, not a folder; pass a folder path")


def check_wandb(mode: str) -> None:
    """``--wandb online`` with no W&B credentials: every run would fail on ``wandb.init``."""
    if mode == "online" and not has_wandb_credentials():
        raise AblateError(
            "--wandb online needs W&B credentials: set WANDB_API_KEY or run `wandb login`; or use --wandb "
            "offline and upload later with `ablate sync`"
        )


def check_results_readable(results: Path) -> None:
    """For the commands that read the store: a results path that is a file, lies under a file or cannot be read."""
    if results.exists() and not results.is_dir():
        raise AblateError(f"--results-dir {results} is not a folder; pass the folder `ablate run` wrote to")
    above = next((p for p in results.parents if p.exists()), None)  # the nearest path above that exists
    if not results.exists() and above is not None and not above.is_dir():
        raise AblateError(
            f"--results-dir {results} cannot be a folder: {above} is a file; pass the folder `ablate run` wrote to"
        )
    if results.is_dir() and not os.access(results, os.R_OK | os.X_OK):
        raise AblateError(
            f"--results-dir {results} cannot be read (permission denied); fix its permissions or pass a readable copy"
        )


def selection(
    abl: Ablation,
    profile: str | None,
    overrides: list[str] | tuple[str, ...] | None,  # None: none
    results: Path = DEFAULT_RESULTS,
    storage: str | None = None,
    *,
    typed: str = "",
    check_data: bool = False,
    will_run: Callable[[RunSpec], bool] | None = None,
) -> Selection:
    """The :class:`Selection` a command works on (:func:`harness.experiment.selection.select`).

    It holds what the command was given for its hints (``typed``: the ablation as named). A read-only command
    (``check_data`` False) needs no data and builds no model (run ids depend only on configs; a variant ``ablate run``
    would refuse has no runs to read), unless ``will_run`` says otherwise.
    """
    from harness.experiment.selection import select  # the validated configs: `ablate --help` never needs them

    return select(
        abl,
        profile,
        overrides or (),
        data_dir(),
        check_data,
        typed=typed,
        results=results,
        storage=storage,
        will_run=will_run if will_run is not None or check_data else (lambda spec: False),
    )


def check_store_exists(
    sel: Selection, tuned: bool = False, *, flag: str = "--profile", data_file: Path | None = None
) -> None:
    """The profile's folder must exist and, when it holds runs, hold one of the selection (made with its overrides).

    Else name the ``ablate run`` that fills it and what to read instead: the profiles the store holds (untuned only;
    ``flag`` names one: ``--profile``, or ``plan``'s ``--pilot``) and ``data_file``, the report's data file to read
    instead (without overrides).
    """
    results, name, profile = sel.results, sel.name, sel.profile
    folders = [results / name / tuned_profile(profile)] + ([] if tuned else [results / name / profile])
    folder = folders[-1]
    run = sel.command("run", *(["--tuned"] if tuned else []), storage=tuned)
    if any(f.exists() for f in folders):  # a file there is a store problem, reported downstream
        if others := _runs_of_other_overrides(sel, folders):
            made = f"with {shlex.join(sel.overrides)}" if sel.overrides else "without key=value overrides"
            raise AblateError(
                f"no runs of {name} / {profile}{' (tuned)' if tuned else ''} in {results} were made {made}, only "
                f"{count(others, 'run')} of other key=value overrides; pass the overrides those were made with (as "
                f"given to `ablate run`), or run `{run}` first"
            )
        return
    held: list[str] = []  # the untuned profiles with a run folder; none in a folder that cannot be listed
    try:
        if not tuned:
            held = sorted(
                p.name
                for p in (results / name).iterdir()
                if p.is_dir() and not p.name.startswith(".") and not p.name.endswith(TUNED)
                if any(r.is_dir() and not r.name.startswith(".") for r in p.iterdir())
            )
    except OSError:
        pass
    raise AblateError(
        f"no runs of {name} / {profile}{' (tuned)' if tuned else ''} in {results}: "
        f"{folder} does not exist; run `{run}` first or pass the --results-dir it wrote to"
        + (f"; the store holds runs of {name} in profile(s) {', '.join(held)}: pass {flag} {held[0]}" if held else "")
        + (
            f"; or pass --from {data_file} to read the runs the committed report was made from"
            if data_file is not None and not sel.overrides and not tuned
            else ""
        )
    )


def _runs_of_other_overrides(sel: Selection, folders: list[Path]) -> int:
    """How many finished runs ``folders`` hold when none is the selection's (finished or not), else 0.

    A run folder is named by its run id; a tuned run is the selection's when its id is the selection's run at its
    recorded parameters.
    """
    from harness.store.runs import scan

    others = 0
    for folder in sorted(folders, key=lambda f: f.name != sel.profile):  # untuned first: a folder check, no reads
        if folder.name == sel.profile:
            if any((folder / run_id).is_dir() for run_id in sel.run_ids):
                return 0
            others += len(scan(sel.results, sel.name, folder.name).records)
            continue
        found = scan(sel.results, sel.name, folder.name)
        ids = sel.tuned_run_ids((r.task, r.variant_label, r.seed, r.tuned_params) for r in found.records)
        if any(r.run_id in ids for r in found.records):
            return 0
        others += len(found.records)
    return others
