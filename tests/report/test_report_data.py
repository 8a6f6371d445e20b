"""A report's data file (reports/data/NAME[.PROFILE].tar.gz: the run folders of the store it was
made from): written beside every report, and ``ablate report --from`` / ``ablate compare --from``
give from it what they give from the store, byte for byte apart from the timestamp, figures
included; bad files are refused (exit 2)."""

from __future__ import annotations

import gzip
import json
import os
import tarfile
from pathlib import Path

import pytest
import yaml

from harness.cli import run as run_cmd
from harness.experiment import ablation as ablation_mod
from harness.store import archive
from harness.store.runs import run_history, scan
from helpers.cli import assert_refused, invoke, untimed
from helpers.data_files import edit_record, repack
from helpers.fake_store import write_decl, write_runs
from helpers.tiny_grid import write_tiny


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> tuple[Path, Path]:
    """A trained tiny grid (2 positions x 2 seeds, with validation histories), then damaged as a
    real store can be: one run diverged without metrics, one history unreadable, one folder whose
    record is not a record."""
    root = tmp_path_factory.mktemp("rd")
    decl = write_tiny(root / "decl", steps=20, val_every=10, seeds=(0, 1))
    results = root / "results"
    assert run_cmd.run(str(decl), None, [], results, workers=1) == 0
    folders = sorted((results / "tiny" / "cpu").iterdir())
    rec = json.loads((folders[0] / "record.json").read_text())
    rec.update(status="diverged", reason="loss is nan at step 7 (last finite loss 2.5)", metrics={})
    (folders[0] / "record.json").write_text(json.dumps(rec))
    (folders[1] / "history.csv").write_text('step,loss\n"1,2\n')
    (results / "tiny" / "cpu" / "zzz-junk").mkdir()
    (results / "tiny" / "cpu" / "zzz-junk" / "record.json").write_text("[1, 2]")
    return decl, results


@pytest.fixture
def reported(store, tmp_path) -> tuple[Path, Path]:
    """``(declaration, its data file)``: the tiny grid reported from the store."""
    decl, results = store
    out = tmp_path / "a"
    result = invoke("report", str(decl), "--results-dir", str(results), "--out", str(out), "--wandb", "off")
    assert result.exit_code == 0, result.output
    return decl, out / "data" / "tiny.tar.gz"


def test_report_from_its_data_file_is_the_same_report(store, reported, tmp_path):
    decl, data = reported
    first, second = data.parent.parent, tmp_path / "b"
    with tarfile.open(data) as tar:
        names = tar.getnames()
        manifest = json.loads(tar.extractfile("manifest.json").read())
    assert names == sorted(names) and manifest["store"] == str(store[1]) and manifest["problems"]
    assert sum(n.endswith("/record.json") for n in names) == 4  # the junk folder is a problem, not a run
    result = invoke("report", str(decl), "--from", str(data), "--out", str(second), "--results-dir", "elsewhere")
    assert result.exit_code == 0, result.output
    original, again = (first / "tiny.md").read_text(), (second / "tiny.md").read_text()
    assert "diverged" in original and "unreadable validation history" in original and "zzz-junk" in original
    assert untimed(again) == untimed(original)
    # its task declares neither a gate nor a target: the report says nothing checked that it was learned
    assert (
        "Not checked: whether the runs learned `copy`, which declare neither a gate nor a convergence target"
        in original
    )
    # an unregistered ablation is run again by its file: `ablate run tiny` would find no such ablation
    reproduce = original.split("## Reproduce")[1]
    assert f"ablate run {decl}\n" in reproduce and f"ablate report {decl}\n" in reproduce, reproduce
    figures = sorted(p.name for p in (first / "figures").iterdir())
    assert figures == sorted(p.name for p in (second / "figures").iterdir()) and figures
    for name in figures:  # the validation curves too: the per-step history travels in the file
        assert (first / "figures" / name).read_bytes() == (second / "figures" / name).read_bytes(), name
    assert not (second / "data").exists()  # --from writes no data file of its own


def test_compare_from_the_data_file_prints_the_same_tables(store, reported):
    decl, data = reported
    for extra in ([], ["--metric", "acc@x1"]):
        from_store = invoke("compare", str(decl), "--results-dir", str(store[1]), *extra)
        from_file = invoke("compare", str(decl), "--from", str(data), *extra)
        assert from_store.exit_code == from_file.exit_code == 0
        assert from_file.stdout == from_store.stdout and "learned" in from_file.stdout


def test_overrides_that_match_no_run_of_the_store_are_refused(store, tmp_path):
    """Overrides that none of the store's runs were made with: report wrote a report "from 0 runs"
    with a Claims section and a data file that `report --from` then refused; compare --format json
    printed prose, exit 0. Refused as when the store holds no runs of the grid."""
    decl, results = store
    out = tmp_path / "out"
    for command, tail in (("report", ["--out", str(out), "--wandb", "off"]), ("compare", ["--format", "json"])):
        assert_refused(
            invoke(command, str(decl), "--results-dir", str(results), *tail, "train.steps=41"),
            f"no runs of tiny / cpu in {results} were made with train.steps=41, only 4 runs of other key=value ",
            f"or run `ablate run {decl} train.steps=41 --profile cpu --results-dir {results}` first",
        )
    assert not out.exists()


def test_store_to_file_to_store_gives_the_same_records_and_bytes(store, reported, tmp_path):
    """Restored, the file's runs are the store's: the same records, record.json and history.csv
    byte for byte; written again from the restored store, the same file but for the store it names."""
    decl, data = reported
    results = tmp_path / "restored"
    assert invoke("restore", str(data), "--results-dir", str(results)).exit_code == 0
    original, back = scan(store[1], "tiny", "cpu"), scan(results, "tiny", "cpu")
    assert back.records == original.records and back.problems == [] and len(original.problems) == 1
    for rec in original.records:  # a damaged history.csv is left out of the file: never restored
        for name in ("record.json", "history.csv"):
            if name == "history.csv" and isinstance(run_history(original, store[1], rec), str):
                assert not (results / rec.where / name).exists()
                continue
            assert (results / rec.where / name).read_bytes() == (store[1] / rec.where / name).read_bytes()
    out = tmp_path / "again"
    assert (
        invoke("report", str(decl), "--results-dir", str(results), "--out", str(out), "--wandb", "off").exit_code == 0
    )
    a, b = archive.read(data, "a"), archive.read(out / "data" / "tiny.tar.gz", "b")
    assert a.records == b.records and {k: v for k, v in a.members.items() if k != "manifest.json"} == {
        k: v for k, v in b.members.items() if k != "manifest.json"
    }
    first = (out / "data" / "tiny.tar.gz").read_bytes()
    assert (
        invoke("report", str(decl), "--results-dir", str(results), "--out", str(out), "--wandb", "off").exit_code == 0
    )
    assert (out / "data" / "tiny.tar.gz").read_bytes() == first  # no timestamp: the same runs, the same bytes


def test_report_all_writes_every_data_file_and_each_regenerates(tmp_path, monkeypatch):
    folder = tmp_path / "ablations"
    mini = write_decl(folder)
    monkeypatch.setattr(ablation_mod, "ABLATIONS_DIR", folder)
    results = tmp_path / "results"
    write_runs(results, mini, "cpu", lambda v, s: 0.5 + 0.01 * s + (0.1 if v == "rope" else 0.0))
    write_runs(results, mini, "pilot", lambda v, s: 0.5 + 0.02 * s)
    out = tmp_path / "reports"
    assert invoke("report", "--all", "--results-dir", str(results), "--out", str(out)).exit_code == 0
    assert sorted(p.name for p in (out / "data").iterdir()) == ["mini.pilot.tar.gz", "mini.tar.gz"]
    for stem in ("mini", "mini.pilot"):
        again = tmp_path / "again"
        result = invoke("report", "mini", "--from", str(out / "data" / f"{stem}.tar.gz"), "--out", str(again))
        assert result.exit_code == 0, result.output
        assert untimed((again / f"{stem}.md").read_text()) == untimed((out / f"{stem}.md").read_text())


def _bad_files(root: Path, good: Path) -> dict[str, Path]:
    raw = good.read_bytes()
    files = {"missing": root / "nope.tar.gz", "devnull": Path(os.devnull), "fifo": root / "fifo.tar.gz"}
    os.mkfifo(files["fifo"])
    for name, data in {
        "binary": b"\xff\xfe\x00junk" * 10,
        "truncated": raw[: len(raw) // 2],
        "empty": b"",
        "emptygz": gzip.compress(b""),
        "csv": gzip.compress(b"kind,run_id,metric,value\nmetric,x,acc,1\n"),  # a data file of the old format
    }.items():
        files[name] = root / f"{name}.tar.gz"
        files[name].write_bytes(data)

    def drop_manifest(m: dict[str, bytes]) -> None:
        del m["manifest.json"]

    def no_runs(m: dict[str, bytes]) -> None:
        for name in [n for n in m if n != "manifest.json"]:
            del m[name]

    files["manifest"] = repack(good, root / "manifest.tar.gz", drop_manifest)
    files["member"] = repack(good, root / "member.tar.gz", lambda m: m.update({"../evil.json": b"{}"}))
    files["norun"] = repack(good, root / "norun.tar.gz", no_runs)
    files["record"] = repack(good, root / "record.tar.gz", lambda m: edit_record(m, lambda r: r.pop("seed")))
    files["status"] = repack(good, root / "status.tar.gz", lambda m: edit_record(m, lambda r: r.update(status="x")))
    files["impossible"] = repack(
        good, root / "impossible.tar.gz", lambda m: edit_record(m, lambda r: r["metrics"].update({"acc@x2": 7.0}))
    )
    files["renamed"] = repack(
        good,
        root / "renamed.tar.gz",
        lambda m: edit_record(m, lambda r: r["metrics"].update({"accuracy@x2": r["metrics"].pop("acc@x2")})),
    )
    return files


@pytest.mark.parametrize(
    "which,words",
    [
        ("missing", ["--from", "no such file"]),
        ("devnull", ["/dev/null: not a regular file"]),
        ("fifo", ["not a regular file (a device, a FIFO or a socket)"]),
        ("binary", ["unreadable (BadGzipFile"]),
        ("truncated", ["unreadable (EOFError"]),
        ("empty", ["empty (0 bytes): a copy or download that did not happen"]),
        ("emptygz", ["empty (gzipped, 0 bytes inside)"]),
        ("csv", ["unreadable (ReadError"]),
        ("manifest", ["not a report's data file (no manifest.json of format ablate-runs/1)"]),
        ("member", ["not a report's data file (member '../evil.json')"]),
        ("norun", ["holds no runs; regenerate it with `ablate report tiny --profile cpu` from a store"]),
        ("record", ["is not a valid run record (field 'seed': Field required)"]),
        ("status", ["is not a valid run record (status 'x' is not one of ok, stalled, diverged, failed, timeout)"]),
        (
            "impossible",
            ["acc@x2 = 7.0, where a run's acc@x2 is [0, 1] (fraction of scored tokens right)", "not edited"],
        ),
        ("renamed", ["'accuracy@x2' is not a metric ablate produces (did you mean 'acc@x2'", "not edited"]),
    ],
)
def test_bad_data_files_are_refused(reported, tmp_path, which, words):
    decl, data = reported
    bad = _bad_files(tmp_path, data)[which]
    for command in ("report", "compare"):
        tail = ["--out", str(tmp_path / "never")] if command == "report" else ["--format", "md"]
        assert_refused(invoke(command, str(decl), "--from", str(bad), *tail), *words)
    assert not (tmp_path / "never").exists()


def test_an_ok_run_without_a_value_is_counted(reported, tmp_path):
    """An ok run without a metric its siblings have, or with a NaN value, is counted in
    ``excluded`` as ``1 without a value``, and the report's legend says what that means."""
    decl, data = reported
    md = ["--format", "md"]
    good = invoke("compare", str(decl), "--from", str(data), *md)
    assert good.exit_code == 0 and "without a value" not in good.stdout
    dropped = repack(data, tmp_path / "dropped.tar.gz", lambda m: edit_record(m, lambda r: r["metrics"].pop("acc@x2")))
    nan = repack(
        data, tmp_path / "nan.tar.gz", lambda m: edit_record(m, lambda r: r["metrics"].update({"acc@x2": None}))
    )
    for bad in (dropped, nan):
        got = invoke("compare", str(decl), "--from", str(bad), *md)
        assert got.exit_code == 0, got.output
        assert "1 without a value" in got.stdout
        out = tmp_path / bad.name.split(".")[0]
        rep = invoke("report", str(decl), "--from", str(bad), "--out", str(out), "--wandb", "off")
        assert rep.exit_code == 0, rep.output
        assert "`N without a value` (`excluded`)" in (out / "tiny.md").read_text()


@pytest.mark.parametrize("mode", ["offline", "online"])
def test_an_explicit_wandb_mode_with_from_is_refused(reported, tmp_path, mode):
    """``--from`` reads no store, so it logs no W&B summary run: an explicit mode asked for one and
    was silently ignored; it is refused as with ``--all`` (the default, auto, and off are not)."""
    decl, data = reported
    assert_refused(
        invoke("report", str(decl), "--from", str(data), "--out", str(tmp_path / "never"), "--wandb", mode),
        f"--from writes no W&B summary run (--wandb {mode})",
        "drop --wandb",
    )
    assert not (tmp_path / "never").exists()
    assert (
        invoke("report", str(decl), "--from", str(data), "--out", str(tmp_path / "b"), "--wandb", "off").exit_code == 0
    )


def test_a_folder_is_refused_with_the_data_file_to_pass(reported, tmp_path):
    """``--from reports`` (the folder ``ablate report`` wrote) names the data file in it; a
    folder without one says which file is expected; neither says "no such file"."""
    decl, data = reported
    out = data.parent.parent
    empty = tmp_path / "empty"
    empty.mkdir()
    for command in ("report", "compare"):
        tail = ["--out", str(tmp_path / "never")] if command == "report" else ["--format", "md"]
        for folder in (out, out / "data"):
            err = assert_refused(
                invoke(command, str(decl), "--from", str(folder), *tail),
                f"--from {folder}: is a folder, not a report's data file; pass the data file of tiny / cpu in it: "
                f"--from {data}",
            )
            assert "no such file" not in err
        assert_refused(
            invoke(command, str(decl), "--from", str(empty), *tail),
            f"--from {empty}: is a folder, not a report's data file, and holds none of tiny / cpu; pass the file "
            f"`ablate report {decl} --profile cpu` wrote (reports/data/tiny.tar.gz)",
        )
    assert not (tmp_path / "never").exists()


def _folder(tmp_path: Path, *names: str) -> Path:
    """``tmp_path/reports`` with empty files ``data/NAME`` (the folder is refused before a file is read)."""
    folder = tmp_path / "reports"
    (folder / "data").mkdir(parents=True)
    for name in names:
        (folder / "data" / name).write_bytes(b"")
    return folder


def test_a_folder_names_the_data_file_of_an_ablation_with_a_dot_in_its_name(tmp_path):
    """An ablation may be named ``tiny.v2``: a folder holding its data file names that file, not "holds none";
    for ``tiny``, that file is another ablation's, never named."""
    decl, short = write_tiny(tmp_path / "decl", name="tiny.v2"), write_tiny(tmp_path / "decl", name="tiny")
    folder = _folder(tmp_path, "tiny.v2.tar.gz", "tiny.v2.pilot.tar.gz")
    never = ["--out", str(tmp_path / "never")]
    assert_refused(
        invoke("report", str(decl), "--from", str(folder), *never),
        f"--from {folder}: is a folder, not a report's data file; pass the data file of tiny.v2 / cpu in it: "
        f"--from {folder / 'data' / 'tiny.v2.tar.gz'}",
    )
    err = assert_refused(
        invoke("report", str(short), "--from", str(folder), *never),
        f"--from {folder}: is a folder, not a report's data file, and holds none of tiny / cpu; pass the file "
        f"`ablate report {short} --profile cpu` wrote (reports/data/tiny.tar.gz)",
    )
    assert "tiny.v2" not in err.replace(str(tmp_path), "")


def test_a_folder_names_the_data_file_of_the_profile_asked_for(tmp_path):
    """With --profile, the data file of that profile; without, the default profile's (``NAME.tar.gz``), however
    the files of the other profiles sort; none of that profile: the file expected."""
    decl = write_tiny(tmp_path / "decl")
    spec = yaml.safe_load(decl.read_text())
    spec["profiles"].update(confirm=spec["profiles"]["cpu"], long=spec["profiles"]["cpu"])
    decl.write_text(yaml.safe_dump(spec))
    folder = _folder(tmp_path, "tiny.confirm.tar.gz", "tiny.long.tar.gz", "tiny.tar.gz")
    never = ["--out", str(tmp_path / "never")]
    for profile, name in (["--profile", "long"], "tiny.long.tar.gz"), ([], "tiny.tar.gz"):
        assert_refused(
            invoke("report", str(decl), *profile, "--from", str(folder), *never),
            f"pass the data file of tiny / {profile[1] if profile else 'cpu'} in it: --from {folder / 'data' / name}",
        )
    (folder / "data" / "tiny.long.tar.gz").unlink()
    assert_refused(
        invoke("compare", str(decl), "--profile", "long", "--from", str(folder)),
        f"--from {folder}: is a folder, not a report's data file, and holds none of tiny / long; pass the file "
        f"`ablate report {decl} --profile long` wrote (reports/data/tiny.long.tar.gz)",
    )


def test_a_data_file_of_another_ablation_profile_or_grid_is_refused(reported, tmp_path):
    decl, data = reported
    other = write_tiny(tmp_path / "decl2", name="tiny2")
    assert_refused(
        invoke("report", str(other), "--from", str(data), "--out", str(tmp_path / "n")),
        "holds runs of tiny, not of tiny2",
    )
    assert_refused(
        invoke("report", str(decl), "--profile", "smoke", "--from", str(data), "--out", str(tmp_path / "n")),
        "holds runs of profile cpu, not smoke; pass that profile's data file or drop --profile",
    )
    assert_refused(
        invoke("report", str(decl), "--from", str(data), "model.d_model=32", "--out", str(tmp_path / "n")),
        f"--from {data}: ",
        "are not runs of the tiny / cpu grid",
    )
    assert_refused(invoke("compare", str(decl), "--from", str(data), "--tuned"), "drop --tuned")
    assert_refused(invoke("report", "--all", "--from", str(data)), "drop --all")
    assert not (tmp_path / "n").exists()


@pytest.mark.parametrize(
    "change,words",
    [
        (lambda r: r.update(seed=7), ["is not the run its id names (its task, seed or config hash to"]),
        (lambda r: r["config"]["train"].update(lr=0.5), ["is not the run its id names", "the file was edited"]),
        (lambda r: r["variant"].update({"model.position": "alibi"}), ["has variant model.position='alibi'"]),
    ],
)
def test_a_run_edited_by_hand_that_keeps_its_id_is_refused(reported, tmp_path, change, words):
    """The run id is a hash of the run's seed, task and config: a data file whose run keeps its id
    but not what the id hashes would report numbers under a run they do not belong to."""
    decl, data = reported
    edited = repack(data, tmp_path / "edited.tar.gz", lambda m: edit_record(m, change))
    for command in ("report", "compare"):
        extra = ("--out", str(tmp_path / "never")) if command == "report" else ("--format", "md")
        assert_refused(invoke(command, str(decl), "--from", str(edited), *extra), *words)
    assert not (tmp_path / "never").exists()


@pytest.mark.parametrize(
    "ablation,profile,words",
    [
        (
            "ffn_width",
            "cpu",
            ["holds runs of ffn_width beside those of tiny", "regenerate it with `ablate report tiny`"],
        ),
        ("tiny", "confirm", ["holds runs of profiles confirm, cpu", "a data file holds one profile"]),
    ],
)
def test_one_run_of_another_ablation_or_profile_names_the_mix(reported, tmp_path, ablation, profile, words):
    """A run moved to another ablation's or profile's folder (its record edited to match) is a file
    to regenerate, not a file of that other ablation (or a --profile to drop: none was passed)."""
    decl, data = reported

    def move(m: dict[str, bytes]) -> None:
        where = edit_record(m, lambda r: r.update(ablation=ablation, profile=profile))
        rid = where.rpartition("/")[2]
        for name in [n for n in m if n.startswith(where + "/")]:
            m[f"{ablation}/{profile}/{rid}/{name.rpartition('/')[2]}"] = m.pop(name)

    edited = repack(data, tmp_path / "edited.tar.gz", move)
    err = assert_refused(invoke("report", str(decl), "--from", str(edited), "--out", str(tmp_path / "never")), *words)
    assert "drop --profile" not in err
    inside = repack(data, tmp_path / "inside.tar.gz", lambda m: edit_record(m, lambda r: r.update(profile="x")))
    assert_refused(
        invoke("compare", str(decl), "--from", str(inside)), "holds a record of tiny / x: the file was edited"
    )
