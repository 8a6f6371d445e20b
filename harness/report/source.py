"""A report's data file (:mod:`harness.store.archive`) checked for ``--from FILE`` and ``ablate restore FILE``.

``ablate report|compare NAME --from FILE`` reads it with :func:`load_source` (unpacked into a temporary store, scanned
as any store), ``ablate restore FILE`` with :func:`plan`: each run must be the run its id names
(:func:`harness.experiment.grid.record_id`), so a run whose seed, config or task was edited is refused.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from pydantic import ValidationError

from harness.errors import AblateError, first_line
from harness.experiment import ablation as ablation_mod
from harness.experiment import metrics as metrics_mod
from harness.experiment.ablation import Ablation
from harness.experiment.grid import record_id
from harness.experiment.selection import Selection
from harness.hints import DEFAULT_REPORTS
from harness.registry import did_you_mean
from harness.report.controls import Controls, read_controls
from harness.report.markdown import report_path
from harness.report.tuning import TuningData, check_studies, restored_studies_path
from harness.store import archive
from harness.store.archive import Archive
from harness.store.runs import DAMAGED_HISTORY, HISTORY, StoreScan, run_dir, run_history, scan
from harness.tuned import tuned_profile

EDITED = "the file was edited; a data file is written by `ablate report NAME`, not edited"


@dataclass
class DataFile:
    """What ``--from`` reads of a data file (None: no studies' summary, no controls' file).

    The temporary store it was unpacked into lives as long as it does.
    """

    scan: StoreScan
    tuned: StoreScan
    store: Path
    tuning: TuningData | None
    controls: Controls | None
    bench: Path
    _tmp: tempfile.TemporaryDirectory[str] = field(repr=False)


def _studies(arc: Archive, at: str) -> TuningData | None:
    """The studies' summary the file holds, or None (AblateError: unreadable, or of another ablation or profile)."""
    names = [n for n in arc.members if n.startswith("restored/")]
    if not names:
        return None
    fix = "regenerate the file with `ablate report NAME` from the store"
    try:
        data = TuningData.model_validate_json(arc.members[names[0]])
    except ValidationError as exc:
        first = first_line(exc)
        raise AblateError(f"{at}: its studies' summary {names[0]} is unreadable ({first}); {fix}") from None
    expected = restored_studies_path(Path(), arc.ablation, arc.profile).as_posix()
    if (data.ablation, data.profile) != (arc.ablation, arc.profile) or names != [expected]:
        raise AblateError(
            f"{at}: its studies' summary {names[0]} is of {data.ablation} / {data.profile}, not of "
            f"{arc.ablation} / {arc.profile}; {fix}"
        )
    return data


def check_ids(arc: Archive, at: str, abl: Ablation | None) -> None:
    """Raises AblateError naming what was edited unless every run is what its id and config say.

    Every run must be the run its id names, its variant the one its config holds (as a registered ``abl`` names it),
    its metrics ablate's, with values a run can score.
    """
    for rec in arc.records.values():
        for name, value in (rec.metrics or {}).items():
            _check_metric(name, value, f"{at}: run {rec.run_id}")
        variant = rec.variant or {}
        for key, value in variant.items():
            section, _, name = key.partition(".")
            if (held := getattr(getattr(rec.config, section, None), name, None)) != value:
                raise AblateError(
                    f"{at}: run {rec.run_id} has variant {key}={value!r}, where its config has {held!r}: {EDITED}"
                )
        ordered = {k: variant[k] for k in [*abl.axes, *variant] if k in variant} if abl is not None else variant
        if abl is not None and abl.label(ordered) != rec.variant_label:  # a record keeps its keys sorted
            raise AblateError(
                f"{at}: run {rec.run_id} is labelled {rec.variant_label!r}, where {abl.name} names its variant "
                f"{abl.label(ordered)!r}: {EDITED}"
            )
        fields = (rec.task, rec.task_version, rec.task_params or {}, rec.config, rec.seed, rec.tuned_params)
        try:
            rid = record_id(*fields, rec.code_versions)
        except Exception as exc:  # noqa: BLE001 - a config or component this code cannot read: one line
            raise AblateError(f"{at}: run {rec.run_id} cannot be checked against its id ({exc})") from None
        if rid != rec.run_id:
            raise AblateError(
                f"{at}: run {rec.run_id} is not the run its id names (its task, seed or config hash to {rid}): {EDITED}"
            )


def _check_metric(name: str, value: float, where: str) -> None:
    """A known metric within its ``floor`` and (in the better direction) ``best``; NaN and inf can be scored."""
    metric = metrics_mod.lookup(name)
    if metric is None:
        known = did_you_mean(name, [n for m in metrics_mod.METRICS for n in m.names((1, 2, 4), 2)])
        raise AblateError(
            f"{where}: {name!r} is not a metric ablate produces{known} (harness/experiment/metrics.py); {EDITED}"
        )
    low, high = metric.floor, metric.best if metric.higher_is_better else None
    if not math.isnan(value) and ((low is not None and value < low) or (high is not None and value > high)):
        span = f"[{low:g}, {high:g}]" if high is not None else f"at least {low:g}"
        raise AblateError(f"{where}: {name} = {value!r}, where a run's {name} is {span} ({metric.unit}); {EDITED}")


def load_source(
    path: Path, abl: Ablation, profile: str | None, select_of: Callable[[str | None], Selection]
) -> tuple[DataFile, Selection]:
    """``(data file, selection on its store)`` for the data file ``path`` of ``abl`` (and ``profile``, if given).

    The file is checked, unpacked into a temporary store and checked against the grid ``select_of(profile)``.

    Raises:
        AblateError: a folder; what :func:`harness.store.archive.read` or :func:`check_ids` refuses;
            a file of another ablation or profile; an unreadable sidecar; runs or studies of another grid.
    """
    path, at = Path(path), f"--from {path}"
    if path.is_dir():  # the file `ablate report` writes of this grid, in the folder or in its data/
        sel = select_of(profile)
        expected = archive.data_path(report_path(abl, sel.profile, DEFAULT_REPORTS, sel.overrides))
        found = next((p for p in (path / "data" / expected.name, path / expected.name) if p.is_file()), None)
        raise AblateError(
            f"{at}: is a folder, not a report's data file; pass the data file of {abl.name} / {sel.profile} "
            f"in it: --from {found}"
            if found
            else f"{at}: is a folder, not a report's data file, and holds none of {abl.name} / {sel.profile}; "
            f"pass the file `{sel.command('report')}` wrote ({expected})"
        )
    arc = archive.read(path, at)
    if arc.ablation != abl.name:
        raise AblateError(
            f"{at}: holds runs of {arc.ablation}, not of {abl.name}; pass the data file of {abl.name} "
            f"(reports/data/{abl.name}[.PROFILE]{archive.SUFFIX})"
        )
    if profile is not None and arc.profile != profile:
        raise AblateError(
            f"{at}: holds runs of profile {arc.profile}, not {profile}; pass that profile's data file or drop --profile"
        )
    check_ids(arc, at, abl)
    tuning = _studies(arc, at)
    tmp = tempfile.TemporaryDirectory(prefix="ablate-from-")
    root = Path(tmp.name)
    archive.unpack(arc, root, metrics_mod.of_machine)
    found, tuned = scan(root, arc.ablation, arc.profile), scan(root, arc.ablation, tuned_profile(arc.profile))
    histories = {
        r.run_id: h for r in found.records if r.status.trained and (h := run_history(found, root, r)) is not None
    }
    found.history = {k: h.replace(str(root), arc.store) if isinstance(h, str) else h for k, h in histories.items()}
    for rec in found.records:  # a damaged history is not in the file: its problem line stands for it
        head = f"{run_dir(Path(arc.store), rec.ablation, rec.profile, rec.run_id) / HISTORY}{DAMAGED_HISTORY}"
        if rec.status.trained and (line := next((p for p in arc.problems if p.startswith(head)), None)):
            found.history[rec.run_id] = line
    tuned.history = {}  # the report lists an unreadable history once, as it reads it
    damaged = [h for h in found.history.values() if isinstance(h, str)]
    found.problems = [p for p in arc.problems if p not in damaged]
    controls = read_controls(path, arc.ablation, arc.profile)
    data = DataFile(found, tuned, Path(arc.store), tuning, controls, root / "bench", tmp)
    sel = select_of(arc.profile)
    strays = [r.run_id for r in data.scan.records if r.run_id not in sel.run_ids]
    if strays:
        raise AblateError(
            f"{at}: {len(strays)} of its {len(data.scan.records)} runs (e.g. {strays[0]}) are not runs "
            f"of the {abl.name} / {sel.profile} grid with these overrides; pass the key=value overrides the "
            "report was made with (its Reproduce section names them), or, if the file was edited, regenerate it "
            f"with `ablate report {abl.name}` from the store"
        )
    check_studies(tuning, abl, f"{at}: its studies' summary")
    return data, replace(sel, results=data.store)


@dataclass
class Plan:
    """The files a restore reads, and those it passes over.

    It reads the archive, the studies' summary and the controls as (kind, id, profile).
    """

    files: list[tuple[Path, Archive, TuningData | None, list[tuple[str, str, str | None]]]] = field(
        default_factory=list
    )
    skipped: list[tuple[Path, str]] = field(default_factory=list)


def plan(paths: list[Path]) -> Plan:
    """Read and check every file (a folder: its data files) before anything is written.

    Raises:
        AblateError: no data file among ``paths``; a folder without one; a file that does not check.
    """
    out = Plan()
    seen: set[Path] = set()
    registered = ablation_mod.available()
    for path in _data_files(paths):
        if path.name.endswith(".guards.json"):
            out.skipped.append((path, "a controls' file: in a store, the controls' own runs decide"))
            continue
        if (key := path.resolve()) in seen:
            out.skipped.append((path, "named twice"))
            continue
        seen.add(key)
        try:
            arc = archive.read(path, str(path))
            check_ids(arc, str(path), ablation_mod.load(arc.ablation) if arc.ablation in registered else None)
            tuning = _studies(arc, str(path))
        except AblateError as exc:  # a committed file that was edited or damaged comes back from git
            hint = (
                f" (a committed file: `git checkout -- {path}` gives it back as written)"
                if archive.git_tracked(path)
                else ""
            )
            raise AblateError(f"{exc}{hint}") from None
        try:
            controls = read_controls(path, arc.ablation, arc.profile) or {}
        except AblateError:  # no reason to refuse the runs: a store's own control runs decide
            controls = {}
        out.files.append(
            (path, arc, tuning, sorted({(g.kind, g.id, g.profile) for gs in controls.values() for g in gs}, key=str))
        )
    if not out.files:
        raise AblateError(
            f"no data file among the paths given (reports/data/NAME[.PROFILE]{archive.SUFFIX}), e.g. "
            "`ablate restore reports/data`"
        )
    return out


def _data_files(paths: list[Path]) -> list[Path]:
    out = []
    for path in map(Path, paths):
        if not path.is_dir():
            out.append(path)
        elif found := sorted(
            p for p in path.iterdir() if p.is_file() and p.name.endswith((archive.SUFFIX, ".guards.json"))
        ):
            out += found
        else:
            raise AblateError(
                f"{path}: a folder that holds no data file (NAME[.PROFILE]{archive.SUFFIX}); pass the folder of a "
                "report's data files (reports/data) or the files"
            )
    return out
