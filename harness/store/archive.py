"""A report's data file, ``reports/data/NAME[.PROFILE].tar.gz``: the run folders its report was made from.

The folders are packed as the store holds them, in one gzipped tar; its layout and uses: docs/reports.md (data files,
restore). Members are sorted, with mtime 0 and no owner: the same runs give the same bytes.
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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harness import hints
from harness.errors import AblateError, first_line
from harness.files import write_atomic
from harness.store.record import Record, parse_record
from harness.store.runs import HISTORY, RECORD, load_record, parse_history, readable_history, unreadable
from harness.tuned import TUNED

FORMAT = "ablate-runs/1"
MANIFEST = "manifest.json"
SUFFIX = ".tar.gz"
PASS = f"pass a report's data file (reports/data/NAME[.PROFILE]{SUFFIX})"
_NAME = r"([^/.][^/]*)"  # a folder name, never . or ..
_RUN = re.compile(rf"{_NAME}/{_NAME}/{_NAME}/(record\.json|history\.csv)")
MAX_FILE = 64 * 2**20
MAX_JSON = 2**20  # the manifest, a record, a bench file
MAX_MEMBER = 8 * 2**20  # a history, a studies' summary
MAX_MEMBERS = 100_000
MAX_TOTAL = 64 * 2**20
MAX_HEADERS = 16 * 2**20  # tar headers and padding beside the members' bytes
"""The limits above, ``MAX_*``: what a data file may hold: its bytes, each member's (JSON of a run or a
bench; a history or a studies' summary), its members, all members' unpacked (the largest committed one:
56 kB, 186 members, 440 kB unpacked, its largest member 15 kB). ``restore`` of any file stays far below
512 MB of memory."""
_MEMBER = re.compile(rf"{_RUN.pattern}|bench/attention-[^/]+\.json|restored/[^/]+\.tuning\.json")


def _empty_gzip(path: Path) -> bool:
    """Whether ``path`` is a gzip of nothing (a download that did not happen)."""
    try:
        with gzip.open(path) as fh:
            return fh.read(1) == b""
    except (OSError, EOFError, zlib.error):
        return False


def newer(fmt: object, at: str) -> None:
    """Raise AblateError when ``fmt`` names a later version of :data:`FORMAT` (``ablate-runs/2``).

    Such a version means a newer ablate wrote the file, which this one cannot read.
    """
    (family, _, version), (own, _, reads) = str(fmt).rpartition("/"), FORMAT.rpartition("/")
    if family == own and version.isdigit() and int(version) > int(reads):
        raise AblateError(
            f"{at}: written by a newer ablate (format {version}; this one reads {reads}): "
            "upgrade ablate (pip install -U ablate) to read it"
        )


def git_tracked(path: Path) -> bool:
    """Whether git tracks the file ``path`` (in the repository around it).

    A tracked file is a committed file that ``git checkout`` gives back.
    """
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
    """The data file of the report ``report`` (``reports/NAME.md``): ``reports/data/NAME.tar.gz``, existing or not."""
    return Path(report).parent / "data" / f"{Path(report).stem}{SUFFIX}"


def existing(report: Path) -> Path | None:
    """The data file of the report ``report`` (:func:`data_path`) when it is a file, else None."""
    return path if (path := data_path(report)).is_file() else None


@dataclass
class Archive:
    """A data file read and checked (:func:`read`).

    It holds its manifest's fields, its records by folder (``ABLATION/PROFILE/RUN_ID``) and every member's bytes.
    """

    path: Path
    ablation: str
    profile: str
    store: str
    problems: list[str]
    records: dict[str, Record]
    members: dict[str, bytes]


def write(
    path: Path,
    results: Path,
    records: list[Record],
    ablation: str,
    profile: str,
    problems: list[str],
    extra: dict[str, bytes],
) -> Path:
    """Write the data file ``path`` and return ``path``.

    The file holds the data of ``records`` (their folders under ``results``), the store ``problems`` its report lists
    and the ``extra`` members (a studies' summary, bench files) by their path.
    """
    manifest = {"format": FORMAT, "ablation": ablation, "profile": profile, "store": str(results), "problems": problems}
    files = {MANIFEST: json.dumps(manifest, indent=1, ensure_ascii=False).encode() + b"\n"}
    for rec in records:
        folder = Path(results) / rec.where
        if (folder / RECORD).is_file():
            files[f"{rec.where}/{RECORD}"] = (folder / RECORD).read_bytes()
        try:
            parse_history(folder / HISTORY)
            files[f"{rec.where}/{HISTORY}"] = (folder / HISTORY).read_bytes()
        except (OSError, ValueError):  # none, or damaged: left out (the manifest's problems name it)
            pass
    files.update(extra)
    packed = io.BytesIO()
    with (
        gzip.GzipFile(filename="", mode="wb", fileobj=packed, mtime=0) as fh,
        tarfile.open(fileobj=fh, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for name, data in sorted(files.items()):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    write_atomic(path, packed.getvalue())
    return path


class _Bounded(io.RawIOBase):
    """A readable stream of at most ``limit`` bytes of ``inner``: OverflowError past it."""

    def __init__(self, inner: io.BufferedIOBase, limit: int) -> None:
        self.inner, self.left = inner, limit

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = self.inner.read(min(len(buffer), self.left + 1))
        if len(data) > self.left:
            raise OverflowError
        self.left -= len(data)
        buffer[: len(data)] = data
        return len(data)


def _check_member(name: str, data: bytes) -> str | None:
    """Why the member ``name`` is not what its place in the layout says, or None.

    A bench file is a JSON object, a history CSV of numbers (:func:`harness.store.runs.parse_history`). The manifest
    and records: :func:`read`, once all is read; a studies' summary: its reader, before any write.
    """
    if name == MANIFEST or name.endswith((f"/{RECORD}", ".tuning.json")):
        return None
    try:
        if name.endswith(f"/{HISTORY}"):
            parse_history(data)
            return None
        raw = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        return f"{type(exc).__name__}: {first_line(exc)}"
    return None if isinstance(raw, dict) else f"a JSON {type(raw).__name__}, expected an object"


def _members(path: Path, at: str) -> dict[str, bytes]:
    """Every member of the data file ``path``, streamed and each checked (:func:`_check_member`) as it is read.

    All stays within the ``MAX_*`` limits: a file too large, a bomb, a member outside the layout or not what its place
    says is refused before the next is read, and nothing is ever written.
    """
    size = path.stat().st_size
    if size > MAX_FILE:
        raise AblateError(f"{at}: {size:,} bytes, over the {MAX_FILE:,} a data file may hold; {PASS}")
    members: dict[str, bytes] = {}
    total = 0
    with open(path, "rb") as raw, gzip.GzipFile(fileobj=raw) as unzipped:
        stream = io.BufferedReader(_Bounded(unzipped, MAX_TOTAL + MAX_HEADERS))
        with tarfile.open(fileobj=stream, mode="r|") as tar:
            for info in tar:
                if not info.isfile() or not (info.name == MANIFEST or _MEMBER.fullmatch(info.name)):
                    raise AblateError(f"{at}: not a report's data file (member {info.name!r}); {PASS}")
                total += info.size
                cap = MAX_MEMBER if info.name.endswith((f"/{HISTORY}", ".tuning.json")) else MAX_JSON
                if len(members) >= MAX_MEMBERS or info.size > cap or total > MAX_TOTAL:
                    raise AblateError(
                        f"{at}: member {info.name!r} ({info.size:,} bytes, {len(members) + 1:,} members, "
                        f"{total:,} bytes in all) is over what a data file holds (this member up to {cap:,} "
                        f"bytes, {MAX_MEMBERS:,} members, {MAX_TOTAL:,} bytes in all); {PASS}"
                    )
                data = tar.extractfile(info).read(info.size)  # type: ignore[union-attr]
                if (why := _check_member(info.name, data)) is not None:
                    raise AblateError(f"{at}: member {info.name} is not what a data file holds there ({why}); {PASS}")
                members[info.name] = data
    return members


def read(path: Path, at: str) -> Archive:
    """The data file ``path``, checked; ``at``: how messages name it (``--from PATH``, or the path).

    An untrusted file: streamed within the ``MAX_*`` limits, each member checked as it is read.

    Raises:
        AblateError: a missing, empty, unreadable or truncated file, one over the ``MAX_*`` limits, of a
            newer format, not a data file (no manifest of this format, a member outside the layout or
            not what its place holds), a record that lies in another run's folder, runs of another
            ablation or profile than its own.
    """
    path = Path(path)
    if not path.is_file():  # /dev/null, a FIFO: reading would mislead or block
        what = "not a regular file (a device, a FIFO or a socket)" if path.exists() else "no such file"
        raise AblateError(f"{at}: {what}; {PASS}")
    if not (size := path.stat().st_size) or _empty_gzip(path):
        raise AblateError(
            f"{at}: empty ({'gzipped, 0 bytes inside' if size else '0 bytes'}): a copy or download "
            f"that did not happen, or a file truncated; {PASS}, or regenerate it with `ablate report NAME` "
            "from the store"
        )
    try:
        members = _members(path, at)
    except OverflowError:
        raise AblateError(f"{at}: unpacks to over {MAX_TOTAL:,} bytes, more than a data file holds; {PASS}") from None
    except (OSError, EOFError, zlib.error, tarfile.TarError) as exc:
        raise AblateError(f"{at}: unreadable ({type(exc).__name__}: {exc}); {PASS}") from None
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
            rec, why = None, unreadable(exc)
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
        again = hints.command("report", ablation, profile)
        raise AblateError(f"{at}: holds no runs; regenerate it with `{again}` from a store that holds runs")
    return Archive(path, ablation, profile, store, problems, records, members)


def difference(held: Record, rec: Record, machine: Callable[[str], bool]) -> str | None:
    """How the store's record of a run differs from the file's, or None.

    The difference is the status, or the first metric missing from one or of another value, but those that
    ``machine`` says measure the machine the run ran on, not the run (never the same twice).
    """
    if held.status != rec.status:
        return f"status {held.status} here, {rec.status} in the file"
    x, y = held.metrics or {}, rec.metrics or {}
    for k in sorted(k for k in x.keys() | y.keys() if not machine(k)):
        a, b = x.get(k), y.get(k)
        if a != b and not (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)):
            return f"{k} {a!r} here, {b!r} in the file"
    return None


@dataclass
class Restored:
    """What one data file gave the store (:func:`unpack`).

    The caller adds the studies' figures found nowhere and the controls of its claims (kind, id, profile).
    """

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
    controls: list[tuple[str, str, str | None]] = field(default_factory=list)  # (kind, id, profile) of each control


def unpack(archive: Archive, results: Path, machine: Callable[[str], bool]) -> Restored:
    """Write a checked data file's runs, studies' summary and bench files into the store ``results``.

    A finished run is kept (said when it differs; its lost history.csv refilled), an unreadable record replaced;
    history first, the record atomically last, so a killed unpack leaves only unfinished folders. A bench file of the
    store is kept.

    Args:
        archive: the checked data file (:func:`read`).
        results: the store to write into.
        machine: whether a metric measures the machine a run ran on (``harness.experiment.metrics.of_machine``):
            a kept run is not said to differ on it.

    Raises:
        OSError: the store cannot be written (the caller says so).
    """
    out = Restored(archive.path, archive.ablation, archive.profile, problems=len(archive.problems))
    for where, rec in archive.records.items():
        folder, history = Path(results) / where, archive.members.get(f"{where}/{HISTORY}")
        held, problem = load_record(folder)
        if held is not None:
            if (how := difference(held, rec, machine)) is not None:
                out.differ.append((rec.run_id, how))
            elif history is not None and not readable_history(folder):
                write_atomic(folder / HISTORY, history)  # the same run: its lost curve comes back
                out.refilled += 1
            out.kept.append(rec)
            continue
        if problem is not None:
            out.replaced.append(rec.run_id)
        folder.mkdir(parents=True, exist_ok=True)
        if history is not None:
            write_atomic(folder / HISTORY, history)
            out.histories += 1
        write_atomic(folder / RECORD, archive.members[f"{where}/{RECORD}"])
        out.written.append(rec)
        out.tuned += rec.profile.endswith(TUNED)
    for name, data in archive.members.items():
        studies, target = name.startswith("restored/"), Path(results) / name
        if studies or (name.startswith("bench/") and not target.exists()):  # the store's bench file is kept
            write_atomic(target, data)
            if studies:
                out.studies = target
            else:
                out.bench.append(target.name)
    return out
