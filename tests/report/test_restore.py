"""``ablate restore``: a report's data file back into a run store gives the runs the report was
made from (records and validation histories equal), the same report again, a grid that trains only
the runs it lacks, and never overwrites a finished run; bad input is refused (exit 2)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from harness.cli import run as run_cmd
from harness.errors import TRAINED
from harness.store.runs import scan
from helpers.cli import assert_refused, invoke, untimed
from helpers.data_files import edit_record, repack
from helpers.tiny_grid import write_tiny


@pytest.fixture(scope="module")
def reported(tmp_path_factory) -> tuple[Path, Path, Path]:
    """A trained tiny grid (2 positions x 2 seeds, with validation histories), one run diverged
    without metrics, and the report made from it: (declaration, store, reports folder)."""
    root = tmp_path_factory.mktemp("restore")
    decl = write_tiny(root / "decl", steps=20, val_every=10, seeds=(0, 1))
    results = root / "results"
    assert run_cmd.run(str(decl), None, [], results, workers=1) == 0
    first = sorted((results / "tiny" / "cpu").iterdir())[0] / "record.json"
    rec = json.loads(first.read_text())
    rec.update(status="diverged", reason="loss is nan at step 7 (last finite loss 2.5)", metrics={})
    first.write_text(json.dumps(rec))
    out = root / "reports"
    assert (
        invoke("report", str(decl), "--results-dir", str(results), "--out", str(out), "--wandb", "off").exit_code == 0
    )
    return decl, results, out


def _runs(results: Path) -> dict[str, dict]:
    return {r.run_id: r.to_json() for r in scan(results, "tiny", "cpu").records}


def _histories(results: Path) -> dict[str, pd.DataFrame]:
    return {p.parent.name: pd.read_csv(p) for p in (results / "tiny" / "cpu").glob("*/history.csv")}


def test_restored_runs_equal_the_stored_ones_and_give_the_same_report(reported, tmp_path):
    decl, results, out = reported
    again = tmp_path / "store"
    result = invoke("restore", str(out / "data" / "tiny.tar.gz"), "--results-dir", str(again))
    assert result.exit_code == 0, result.output
    assert "4 runs written (4 with a validation history)" in result.stdout
    restored = _runs(again)
    assert restored == _runs(results) and len(restored) == 4  # the store's own records, every field
    stored, restored = _histories(results), _histories(again)
    assert restored.keys() == stored.keys() and len(stored) == 4
    for rid in stored:
        pd.testing.assert_frame_equal(restored[rid], stored[rid])
    report = tmp_path / "reports"
    made = invoke("report", str(decl), "--results-dir", str(again), "--out", str(report), "--wandb", "off")
    assert made.exit_code == 0, made.output
    original = untimed((out / "tiny.md").read_text()).replace(str(results), "STORE")
    assert untimed((report / "tiny.md").read_text()).replace(str(again), "STORE") == original
    assert "diverged" in original


def test_a_restored_store_trains_only_the_runs_it_lacks(reported, tmp_path):
    decl, _, out = reported
    store = tmp_path / "store"
    assert invoke("restore", str(out / "data" / "tiny.tar.gz"), "--results-dir", str(store)).exit_code == 0
    more = write_tiny(tmp_path / "more", steps=20, val_every=10, seeds=(0, 1, 2))  # the same grid, one more seed
    before = set(_runs(store))
    assert run_cmd.run(str(more), None, [], store, workers=1) == 0
    after = _runs(store)
    assert before < set(after) and len(after) == 6
    assert {after[r]["seed"] for r in set(after) - before} == {2}  # seeds 0 and 1 were not trained again


def test_a_run_already_in_the_store_is_kept_and_a_different_one_said(reported, tmp_path):
    decl, results, out = reported
    store = tmp_path / "store"
    shutil.copytree(results, store)
    data = str(out / "data" / "tiny.tar.gz")
    same = invoke("restore", data, "--results-dir", str(store))
    assert same.exit_code == 0, same.output
    assert "0 runs written" in same.stdout and "4 runs already in the store, kept" in same.stdout
    ok = next(
        p for p in sorted((store / "tiny" / "cpu").iterdir()) if json.loads((p / "record.json").read_text())["metrics"]
    )
    rec = json.loads((ok / "record.json").read_text())
    rec["metrics"]["train_tokens_per_s"] *= 3  # the same run on another machine: not a difference
    (ok / "record.json").write_text(json.dumps(rec))
    assert invoke("restore", data, "--results-dir", str(store)).exit_code == 0
    was = rec["metrics"]["acc@x1"]
    rec["metrics"] = {k: v + 1 for k, v in rec["metrics"].items()}
    (ok / "record.json").write_text(json.dumps(rec))
    differ = invoke("restore", data, "--results-dir", str(store))
    assert differ.exit_code == 1, differ.output
    assert (
        f"1 of them differs from the file's (status or metrics), e.g. {ok.name} (acc@x1 {was + 1!r} here, "
        f"{was!r} in the file): the store's is kept" in differ.stdout
    )
    assert json.loads((ok / "record.json").read_text()) == rec  # kept as it was


def test_an_unfinished_restore_is_completed_by_the_next(reported, tmp_path):
    decl, _, out = reported
    store = tmp_path / "store"
    data = str(out / "data" / "tiny.tar.gz")
    assert invoke("restore", data, "--results-dir", str(store)).exit_code == 0
    folder = sorted((store / "tiny" / "cpu").iterdir())[1]
    (folder / "record.json").unlink()  # killed after the history, before the record
    result = invoke("restore", data, "--results-dir", str(store))
    assert result.exit_code == 0 and "1 run written" in result.stdout, result.output
    assert (folder / "record.json").is_file()


def test_bad_input_is_refused_before_anything_is_written(reported, tmp_path):
    _, _, out = reported
    data = out / "data" / "tiny.tar.gz"
    store = tmp_path / "s"
    assert_refused(invoke("restore", "--results-dir", str(store)), "name the data files")
    assert_refused(invoke("restore", str(tmp_path), "--results-dir", str(store)), "a folder")
    missing = assert_refused(invoke("restore", str(tmp_path / "none.tar.gz"), "--results-dir", str(store)), "no such")
    assert "git checkout" not in missing  # git gives back a file it holds, not a path named wrong
    (tmp_path / "empty.tar.gz").write_bytes(b"")
    empty = assert_refused(invoke("restore", str(tmp_path / "empty.tar.gz"), "--results-dir", str(store)), "empty")
    assert "git checkout" not in empty  # a file git does not track: git cannot give it back
    junk = repack(data, tmp_path / "junk.tar.gz", lambda m: m.pop("manifest.json"))
    assert_refused(invoke("restore", str(junk), "--results-dir", str(store)), "not a report's data file (no manifest")
    # a seed edited in one run's record: the record parses, but the run is not the one its id names
    rid = ""

    def seed(m: dict[str, bytes]) -> None:
        nonlocal rid
        rid = edit_record(m, lambda r: r.update(seed=9)).rpartition("/")[2]

    edited = repack(data, tmp_path / "edited.tar.gz", seed)
    # the good file first: nothing of it is written either, every file is checked before any is
    assert_refused(
        invoke("restore", str(data), str(edited), "--results-dir", str(store)),
        f"run {rid} is not the run its id names",
        "the file was edited",
    )
    assert not store.exists()


def test_the_files_beside_data_files_are_passed_over_and_a_file_named_twice_once(reported, tmp_path):
    """`ablate restore reports/data/*` matches the studies' and controls' files too: not data files."""
    _, _, out = reported
    folder = tmp_path / "data"
    shutil.copytree(out / "data", folder)
    data = folder / "tiny.tar.gz"
    (folder / "tiny.guards.json").write_text(json.dumps({"ablation": "tiny", "profile": "cpu", "guards": {}}))
    store = tmp_path / "s"
    result = invoke("restore", *map(str, sorted(folder.iterdir())), str(data), "--results-dir", str(store))
    assert result.exit_code == 0, result.output
    assert "a controls' file: in a store, the controls' own runs decide" in result.stdout
    assert "(named twice)" in result.stdout and "4 runs written" in result.stdout
    assert "4 runs restored into" in result.stdout and "`ablate report PATH/TO/tiny.yaml --profile cpu" in result.stdout


def test_an_unreadable_record_is_replaced_by_the_files(reported, tmp_path):
    """An unreadable record.json is not a finished run (`status`: pending, so `run` would train it
    again): the file's record takes its place, and that is said."""
    _, results, out = reported
    store = tmp_path / "store"
    shutil.copytree(results, store)
    folder = next(p for p in sorted((store / "tiny" / "cpu").iterdir()) if (p / "record.json").is_file())
    good = json.loads((folder / "record.json").read_text())
    (folder / "record.json").write_text('{"trunc')
    result = invoke("restore", str(out / "data" / "tiny.tar.gz"), "--results-dir", str(store))
    assert result.exit_code == 0, result.output
    assert "1 run written" in result.stdout and "1 of them in place of an unreadable record.json" in result.stdout
    assert json.loads((folder / "record.json").read_text())["metrics"] == good["metrics"]


def test_a_store_that_cannot_be_written_is_said_in_one_line(reported, tmp_path, monkeypatch):
    from harness.store import archive

    def read_only(*args, **kwargs):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(archive, "write_atomic", read_only)
    _, _, out = reported
    assert_refused(
        invoke("restore", str(out / "data" / "tiny.tar.gz"), "--results-dir", str(tmp_path / "s")),
        "cannot write the store under --results-dir",
        "Read-only file system",
        "what was written before it stays (the same command again completes the rest)",
    )


def test_a_variant_edited_is_refused(reported, tmp_path):
    """The variant is not in the run id (its config is): a run relabelled hashed to its id and
    restored as another variant's run."""
    _, _, out = reported
    rid = ""

    def relabel(m: dict[str, bytes]) -> None:
        nonlocal rid
        rid = edit_record(m, lambda r: r.update(variant={k: "rope" for k in r["variant"]})).rpartition("/")[2]

    edited = repack(out / "data" / "tiny.tar.gz", tmp_path / "edited.tar.gz", relabel)
    assert_refused(
        invoke("restore", str(edited), "--results-dir", str(tmp_path / "s")),
        f"run {rid} has variant model.position='rope', where its config has",
    )


def test_a_kept_runs_lost_history_is_written_again(reported, tmp_path):
    _, results, out = reported
    store = tmp_path / "store"
    shutil.copytree(results, store)
    folder = next(
        p
        for p in sorted((store / "tiny" / "cpu").iterdir())
        if (p / "history.csv").is_file() and json.loads((p / "record.json").read_text())["status"] in TRAINED
    )
    (folder / "history.csv").unlink()
    done = invoke("restore", str(out / "data" / "tiny.tar.gz"), "--results-dir", str(store))
    assert done.exit_code == 0 and "the lost validation history of 1 kept run written again" in done.stdout
    assert pd.read_csv(folder / "history.csv").equals(
        pd.read_csv(results / "tiny" / "cpu" / folder.name / "history.csv")
    )


def test_a_folder_stands_for_the_data_files_it_holds(reported, tmp_path):
    """`ablate restore reports/data`: every data file in it, the controls' files passed over."""
    _, _, out = reported
    done = invoke("restore", str(out / "data"), "--results-dir", str(tmp_path / "s"))
    assert done.exit_code == 0 and "4 runs written" in done.stdout, done.output
    (tmp_path / "empty").mkdir()
    assert_refused(
        invoke("restore", str(tmp_path / "empty"), "--results-dir", str(tmp_path / "t")), "holds no data file"
    )
