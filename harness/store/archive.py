"""A report's data file, ``reports/data/NAME[.PROFILE].tar.gz``: the run folders its report was
made from, as the store holds them, in one gzipped tar; its layout and uses: docs/reports.md (data
files, restore). Members are sorted, with mtime 0 and no owner: the same runs give the same bytes.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import re
import subprocess
import tarfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import AblateError
from harness.store.record import Record, parse_record
from harness.store.runs import HISTORY, RECORD, load_record, readable_history, run_dir, write_atomic

FORMAT = "ablate-runs/1"
MANIFEST = "manifest.json"
SUFFIX = ".tar.gz"
TUNED = "+tuned"
PASS = "pass a report's data file (reports/data/NAME[.PROFILE].tar.gz)"
_NAME = r"([^/.][^/]*)"  # a folder name, never . or ..
_RUN = re.compile(rf"{_NAME}/{_NAME}/{_NAME}/(record\.json|history\.csv)")
_MEMBER = re.compile(rf"{_RUN.pattern}|bench/attention-[^/]+\.json|restored/[^/]+\.tuning\.json")


def newer(fmt: object, at: str) -> None:
    """Raise AblateError when ``fmt`` names a later version of :data:`FORMAT` (``ablate-runs/2``):
    a newer ablate wrote the file, which this one cannot read."""
    family, _, version = str(fmt).rpartition("/")
    if family == FORMAT.rpartition("/")[0] and version.isdigit() and int(version) > int(FORMAT.rpartition("/")[2]):
        raise AblateError(
            f"{at}: written by a newer ablate (format {version}; this one reads {FORMAT.rpartition('/')[2]}): "
            "upgrade ablate (pip install -U ablate) to read it"
        )


def git_tracked(path: Path) -> bool:
    """Whether git tracks the file ``path`` (in the repository around it): a committed file that
    ``git checkout`` gives back."""
    try:
        done = subprocess.run(
            ["git", "ls-files", "--error-unmatch", "--", Path(path).name],
            cwd=Path(path).parent,
            capture_output=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def data_path(report: Path) -> Path:
    return Path(report).parent / "data" / f"{Path(report).stem}{SUFFIX}"


def existing(report: Path) -> Path | None:
    return path if (path := data_path(report)).is_file() else None


@dataclass
class Archive:
    """A data file read and checked (:func:`read`): its manifest's fields, its records by folder
    (``ABLATION/PROFILE/RUN_ID``) and every member's bytes."""

    path: Path
    ablation: str
    profile: str
    store: str
    problems: list[str]
    records: dict[str, Record]
    members: dict[str, bytes]

    @property
    def runs(self) -> list[Record]:
        return list(self.records.values())


def write(
    path: Path,
    results: Path,
    records: list[Record],
    ablation: str,
    profile: str,
    problems: list[str],
    extra: dict[str, bytes],
) -> Path:
    """Write the data file of ``records`` (their folders under ``results``), the store ``problems``
    its report lists and the ``extra`` members (a studies' summary, bench files) by their path."""
    manifest = {"format": FORMAT, "ablation": ablation, "profile": profile, "store": str(results), "problems": problems}
    files = {MANIFEST: json.dumps(manifest, indent=1, ensure_ascii=False).encode() + b"\n"}
    for rec in records:
        folder = run_dir(results, rec.ablation, rec.profile, rec.run_id)
        for name in (RECORD, HISTORY):
            if (folder / name).is_file():
                files[f"{rec.where}/{name}"] = (folder / name).read_bytes()
    files.update(extra)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in sorted(files.items()):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as fh:
        fh.write(buf.getvalue())
    return path


def read(path: Path, at: str) -> Archive:
    """The data file ``path``, checked; ``at``: how messages name it (``--from PATH``, or the path).

    Raises:
        AblateError: a missing, empty, unreadable or truncated file, not a data file (no manifest of
            this format, a member outside the layout), a record that does not parse or lies in
            another run's folder, runs of another ablation or profile than its own.
    """
    path = Path(path)
    if not path.is_file():  # /dev/null, a FIFO: reading would mislead or block
        what = "not a regular file (a device, a FIFO or a socket)" if path.exists() else "no such file"
        raise AblateError(f"{at}: {what}; {PASS}")
    members: dict[str, bytes] = {}
    try:
        raw = path.read_bytes()
        data = gzip.decompress(raw) if raw else b""
        if data:
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
                for info in tar:
                    if not info.isfile() or not (info.name == MANIFEST or _MEMBER.fullmatch(info.name)):
                        raise AblateError(f"{at}: not a report's data file (member {info.name!r}); {PASS}")
                    members[info.name] = tar.extractfile(info).read()  # type: ignore[union-attr]
    except (OSError, EOFError, zlib.error, tarfile.TarError) as exc:
        raise AblateError(f"{at}: unreadable ({type(exc).__name__}: {exc}); {PASS}") from None
    if not data:
        raise AblateError(
            f"{at}: empty ({'gzipped, 0 bytes inside' if raw else '0 bytes'}): a copy or download that did not "
            f"happen, or a file truncated; {PASS}, or regenerate it with `ablate report NAME` from the store"
        )
    try:
        manifest = json.loads(members.get(MANIFEST, b"null"))
        newer(manifest.get("format"), at)
        ablation, profile, store = (manifest[k] for k in ("ablation", "profile", "store"))
        if manifest["format"] != FORMAT or not all(isinstance(v, str) for v in (ablation, profile, store)):
            raise ValueError(manifest)
    except (ValueError, TypeError, KeyError, AttributeError):
        raise AblateError(f"{at}: not a report's data file (no {MANIFEST} of format {FORMAT}); {PASS}") from None
    problems = [str(p) for p in manifest.get("problems") or []]
    records: dict[str, Record] = {}
    for name in sorted(members):
        if not (m := _RUN.fullmatch(name)) or m[4] != RECORD:
            continue
        try:
            rec, why = parse_record(json.loads(members[name]), m[3])
        except ValueError as exc:
            rec, why = None, f"unreadable record ({type(exc).__name__}: {exc})"
        if rec is None:
            raise AblateError(f"{at}: run {m[3]} is not a valid run record ({why})")
        if (rec.ablation, rec.profile) != (m[1], m[2]):
            raise AblateError(f"{at}: {name} holds a record of {rec.ablation} / {rec.profile}: the file was edited")
        records[name.rpartition("/")[0]] = rec
    grids = {(r.ablation, r.profile.removesuffix(TUNED)) for r in records.values()}
    if other := sorted({a for a, _ in grids} - {ablation}):
        raise AblateError(
            f"{at}: holds runs of {', '.join(other)} beside those of {ablation}; a data file holds one ablation: "
            f"regenerate it with `ablate report {ablation}` from the store"
        )
    if len(profiles := sorted({p for _, p in grids} | {profile})) > 1:
        raise AblateError(
            f"{at}: holds runs of profiles {', '.join(profiles)}; a data file holds one profile (and its "
            f"tuned runs): regenerate it with `ablate report {ablation} --profile PROFILE` from the store"
        )
    if not records:
        raise AblateError(f"{at}: holds no runs; regenerate it with `ablate report NAME` from a store that holds runs")
    return Archive(path, ablation, profile, store, problems, records, members)


MACHINE = ("train_tokens_per_s", "peak_mem_mb")
"""Metrics of the machine a run ran on, not of the run: never the same twice, so not compared."""


def difference(held: Record, rec: Record) -> str | None:
    """How the store's record of a run differs from the file's (status, or the first metric but
    :data:`MACHINE` missing from one or of another value), or None."""
    if held.status != rec.status:
        return f"status {held.status} here, {rec.status} in the file"
    x, y = held.metrics or {}, rec.metrics or {}
    for k in sorted((x.keys() | y.keys()) - set(MACHINE)):
        a, b = x.get(k), y.get(k)
        if a != b and not (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)):
            return f"{k} {a!r} here, {b!r} in the file"
    return None


@dataclass
class Restored:
    """What one data file gave the store (:func:`unpack`); the caller adds the studies' figures
    found nowhere and the controls of its claims (kind, id, profile)."""

    path: Path
    ablation: str
    profile: str
    written: list[Record] = field(default_factory=list)
    kept: list[Record] = field(default_factory=list)
    differ: list[tuple[str, str]] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    histories: int = 0
    problems: int = 0
    tuned: int = 0
    refilled: int = 0
    studies: Path | None = None
    bench: list[str] = field(default_factory=list)
    missing_figures: list[str] = field(default_factory=list)
    guards: list[tuple[str, str, str | None]] = field(default_factory=list)


def unpack(archive: Archive, results: Path) -> Restored:
    """Write a checked data file's runs, studies' summary and bench files into the store
    ``results``. A finished run is kept (said when it differs; its lost history.csv refilled), an
    unreadable record replaced; history first, the record atomically last, so a killed unpack
    leaves only unfinished folders. A bench file of the store is kept.

    Raises:
        OSError: the store cannot be written (the caller says so).
    """
    out = Restored(archive.path, archive.ablation, archive.profile, problems=len(archive.problems))
    for where, rec in archive.records.items():
        folder, history = Path(results) / where, archive.members.get(f"{where}/{HISTORY}")
        held, problem = load_record(folder)
        if held is not None:
            if (how := difference(held, rec)) is not None:
                out.differ.append((rec.run_id, how))
            elif history is not None and not readable_history(folder):
                (folder / HISTORY).write_bytes(history)  # the same run: its lost curve comes back
                out.refilled += 1
            out.kept.append(rec)
            continue
        if problem is not None:
            out.replaced.append(rec.run_id)
        folder.mkdir(parents=True, exist_ok=True)
        if history is not None:
            (folder / HISTORY).write_bytes(history)
            out.histories += 1
        write_atomic(folder / RECORD, archive.members[f"{where}/{RECORD}"])
        out.written.append(rec)
        out.tuned += rec.profile.endswith(TUNED)
    for name, data in archive.members.items():
        studies, target = name.startswith("restored/"), Path(results) / name
        if studies or (name.startswith("bench/") and not target.exists()):  # the store's bench file is kept
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            if studies:
                out.studies = target
            else:
                out.bench.append(target.name)
    return out
