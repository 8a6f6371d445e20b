"""A report's data file is untrusted input: one of a newer format, a bomb, a member that is not what
its place says, a history of text; each refused (or reported) before anything is written."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import tarfile
import zlib
from pathlib import Path

import pytest

from harness.store.archive import FORMAT
from helpers.cli import assert_refused, invoke
from helpers.data_files import pack
from helpers.fake_store import bare_record

HISTORY = b"step,loss,acc\n10,2.5,0.1\n20,2.0,0.2\n"


def members(**changes: bytes | None) -> dict[str, bytes]:
    """The members of a data file of one ok run (``a/p/r1``) with its history; ``changes`` by
    member name (``None`` drops one)."""
    manifest = {"format": FORMAT, "ablation": "a", "profile": "p", "store": "results", "problems": []}
    record = bare_record(status="ok", metrics={"acc@x1": 0.5})
    out = {
        "manifest.json": json.dumps(manifest).encode(),
        "a/p/r1/record.json": json.dumps(record).encode(),
        "a/p/r1/history.csv": HISTORY,
    }
    for name, data in changes.items():
        if data is None:
            out.pop(name, None)
        else:
            out[name] = data
    return out


def test_a_data_file_of_a_newer_format_says_upgrade(tmp_path: Path) -> None:
    manifest = json.loads(members()["manifest.json"]) | {"format": "ablate-runs/2"}
    path = pack(tmp_path / "a.p.tar.gz", members(**{"manifest.json": json.dumps(manifest).encode()}))
    err = assert_refused(invoke("restore", str(path), "--results-dir", str(tmp_path / "s")))
    assert "written by a newer ablate (format 2; this one reads 1): upgrade ablate" in err, err
    assert "not a report's data file" not in err and "git checkout" not in err
    assert not (tmp_path / "s").exists()


def test_the_git_checkout_hint_only_for_a_file_git_tracks(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    damaged = members(**{"manifest.json": None})
    tracked, loose = pack(repo / "a.p.tar.gz", damaged), pack(repo / "b.p.tar.gz", damaged)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", tracked.name], check=True)
    subprocess.run([*git, "commit", "-qm", "data"], check=True)
    store = str(tmp_path / "s")
    assert f"`git checkout -- {tracked}`" in assert_refused(invoke("restore", str(tracked), "--results-dir", store))
    assert "git checkout" not in assert_refused(invoke("restore", str(loose), "--results-dir", store))


def _bomb(path: Path, name: str, size: int, tar_header: bool = True) -> Path:
    """A gzip of a tar whose one member ``name`` holds ``size`` zero bytes (or, without
    ``tar_header``, of the zeros alone), made at the cost of compressing 1 MiB: a deflate block
    flushed whole is the same bytes each time, so the 1 MiB block is repeated."""
    mib = b"\0" * 2**20
    head = b""
    if tar_header:
        info = tarfile.TarInfo(name)
        info.size = size
        head = info.tobuf(tarfile.GNU_FORMAT)
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = deflate.compress(head) + deflate.flush(zlib.Z_FULL_FLUSH)
    block = deflate.compress(mib) + deflate.flush(zlib.Z_FULL_FLUSH)
    assert deflate.compress(mib) + deflate.flush(zlib.Z_FULL_FLUSH) == block
    crc = zlib.crc32(head)
    for _ in range(size // 2**20):
        crc = zlib.crc32(mib, crc)
    total = len(head) + size
    with open(path, "wb") as fh:
        fh.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff" + first)
        for _ in range(size // 2**20):
            fh.write(block)
        fh.write(deflate.flush() + struct.pack("<II", crc, total & 0xFFFFFFFF))
    return path


PEAK = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30))  # the old reader would exhaust the machine
from harness.cli.app import app
try:
    app(["restore", sys.argv[1], "--results-dir", sys.argv[2]])
except SystemExit as exc:
    code = exc.code
# VmHWM: this process's own peak; ru_maxrss also counts the parent's size when it forked (pytest's)
hwm = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print("exit", code, "peak_mb", int(hwm.split()[1]) // 1024)
"""


def _restore_peak(path: Path, store: Path) -> tuple[int, int, str]:
    out = subprocess.run([sys.executable, "-c", PEAK, str(path), str(store)], capture_output=True, text=True)
    words = out.stdout.split()
    assert words[-4:-3] == ["exit"], out.stdout + out.stderr[-2000:]
    return int(words[-3]), int(words[-1]), out.stderr


@pytest.mark.parametrize(
    ("what", "words"),
    [
        ("member", "is over what a data file holds"),  # one bench member of 2 GiB of zeros
        ("no-tar", "not a report's data file"),  # 2 GiB of zeros, no tar inside
        ("json", "is over what a data file holds"),  # members of valid JSON, 1 MiB each, 200 MiB in all
        ("csv", "is over what a data file holds"),  # histories of numbers, 8 MiB each, 200 MiB in all
    ],
)
def test_a_data_file_bomb_is_refused_in_bounded_memory_and_writes_nothing(
    tmp_path: Path, what: str, words: str
) -> None:
    path = tmp_path / "a.p.tar.gz"
    if what == "json":
        padded = b"{}" + b" " * (2**20 - 2)
        pack(path, members() | {f"bench/attention-{i}.json": padded for i in range(200)})
    elif what == "csv":
        numbers = b"step,loss\n" + b"1,2\n" * (2**21 - 3)
        pack(path, members() | {f"a/p/r{i}/history.csv": numbers for i in range(25)})
    else:
        _bomb(path, "bench/attention-cpu.json", 2 * 2**30, tar_header=what == "member")
    assert path.stat().st_size < 10 * 2**20
    store = tmp_path / "store"
    code, peak_mb, err = _restore_peak(path, store)
    print(f"restore of a {path.stat().st_size / 2**20:.1f} MB {what} bomb: exit {code}, peak {peak_mb} MB")
    assert code == 2 and words in err, err
    assert peak_mb < 512, peak_mb
    assert not store.exists()


@pytest.mark.parametrize(
    ("member", "data", "words"),
    [
        ("a/p/r1/history.csv", b"step,loss\n10,2.5\n20,abc\n", "column 'loss' holds text"),
        ("a/p/r1/history.csv", b"step,loss\n10,2.5\n20,\0\0\0\n", "column 'loss' holds text"),
        ("bench/attention-cpu.json", b"\0" * 64, "JSONDecodeError"),
        ("bench/attention-cpu.json", b"[1, 2]", "a JSON list, expected an object"),
    ],
)
def test_a_member_not_what_its_place_holds_is_refused_before_anything_is_written(
    tmp_path: Path, member: str, data: bytes, words: str
) -> None:
    path = pack(tmp_path / "a.p.tar.gz", members(**{member: data}))
    store = tmp_path / "store"
    err = assert_refused(invoke("restore", str(path), "--results-dir", str(store)), f"member {member}", words)
    assert not store.exists(), err
