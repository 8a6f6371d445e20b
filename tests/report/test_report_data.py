"""A report's data file (reports/data/NAME[.PROFILE].csv): written beside every report, and
``ablate report --from`` / ``ablate compare --from`` give from it what they give from the store,
byte for byte apart from the timestamp, figures included; bad files are refused (exit 2)."""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
from pathlib import Path

import pandas as pd
import pytest

from harness.cli import run as run_cmd
from harness.experiment import ablation as ablation_mod
from harness.experiment.selection import select
from harness.report import data as report_data
from harness.report import source
from harness.store.runs import history_of
from helpers.cli import assert_refused, invoke, untimed
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


def test_report_from_its_data_file_is_the_same_report(store, tmp_path):
    decl, results = store
    first, second = tmp_path / "a", tmp_path / "b"
    assert (
        invoke("report", str(decl), "--results-dir", str(results), "--out", str(first), "--wandb", "off").exit_code == 0
    )
    data = first / "data" / "tiny.csv"
    assert data.is_file()
    frame = pd.read_csv(data, keep_default_na=False, dtype=str)
    assert set(frame["kind"]) == {"metric", "history", "run", "problem", "end"} and frame["kind"].iloc[-1] == "end"
    assert frame[frame["kind"] == "history"]["step"].astype(int).min() >= 1
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


def test_compare_from_the_data_file_prints_the_same_tables(store, tmp_path):
    decl, results = store
    out = tmp_path / "a"
    assert (
        invoke("report", str(decl), "--results-dir", str(results), "--out", str(out), "--wandb", "off").exit_code == 0
    )
    for extra in ([], ["--metric", "acc@x1"]):
        from_store = invoke("compare", str(decl), "--results-dir", str(results), *extra)
        from_file = invoke("compare", str(decl), "--from", str(out / "data" / "tiny.csv"), *extra)
        assert from_store.exit_code == from_file.exit_code == 0
        assert from_file.stdout == from_store.stdout and "learned" in from_file.stdout


def test_records_survive_the_round_trip(store, tmp_path):
    """Every field the report reads comes back with its type: the rebuilt records equal the
    store's apart from the fields the file does not carry (host, W&B id, ...)."""
    from harness.analysis.comparisons import analyse

    decl, results = store
    abl = ablation_mod.load(str(decl))
    found = analyse(select(abl, "cpu", check_data=False), results).scan
    report = tmp_path / "tiny.md"
    report_data.write_data(found.records, history_of(found, results), found.problems, results, report)
    read = source.read_data(report_data.data_path(report), "tiny", None)
    back = read.scan
    assert (read.profile, read.store, read.tuned.records, read.tuning) == ("cpu", results, [], None)
    carried = {report_data.RENAMED.get(c, c) for c, _ in report_data.RUN_FIELDS}
    for a, b in zip(found.records, back.records, strict=True):
        assert b["config"] == a["config"] and b["metrics"] == a["metrics"]
        assert {k: a.get(k) for k in carried} == {k: b.get(k) for k in carried}  # an empty cell reads as None
    assert back.problems == found.problems


def test_a_large_table_is_gzipped_and_reads_the_same(store, tmp_path, monkeypatch):
    decl, results = store
    monkeypatch.setattr(report_data, "GZIP_ABOVE", 10)
    out = tmp_path / "a"
    assert (
        invoke("report", str(decl), "--results-dir", str(results), "--out", str(out), "--wandb", "off").exit_code == 0
    )
    path = out / "data" / "tiny.csv.gz"
    assert path.is_file() and not (out / "data" / "tiny.csv").exists()
    first = path.read_bytes()
    assert (
        invoke("report", str(decl), "--results-dir", str(results), "--out", str(out), "--wandb", "off").exit_code == 0
    )
    assert path.read_bytes() == first  # no timestamp in the gzip header: the same table, the same bytes
    result = invoke("report", str(decl), "--from", str(path), "--out", str(tmp_path / "b"))
    assert result.exit_code == 0, result.output
    assert untimed((tmp_path / "b" / "tiny.md").read_text()) == untimed((out / "tiny.md").read_text())


def test_report_all_writes_every_data_file_and_each_regenerates(tmp_path, monkeypatch):
    folder = tmp_path / "ablations"
    mini = write_decl(folder)
    monkeypatch.setattr(ablation_mod, "ABLATIONS_DIR", folder)
    results = tmp_path / "results"
    write_runs(results, mini, "cpu", lambda v, s: 0.5 + 0.01 * s + (0.1 if v == "rope" else 0.0))
    write_runs(results, mini, "pilot", lambda v, s: 0.5 + 0.02 * s)
    out = tmp_path / "reports"
    assert invoke("report", "--all", "--results-dir", str(results), "--out", str(out)).exit_code == 0
    assert sorted(p.name for p in (out / "data").iterdir()) == ["mini.csv", "mini.pilot.csv"]
    for stem in ("mini", "mini.pilot"):
        again = tmp_path / "again"
        result = invoke("report", "mini", "--from", str(out / "data" / f"{stem}.csv"), "--out", str(again))
        assert result.exit_code == 0, result.output
        assert untimed((again / f"{stem}.md").read_text()) == untimed((out / f"{stem}.md").read_text())


def _bad_files(root: Path, good: Path) -> dict[str, Path]:
    text = good.read_text()
    files = {"missing": root / "nope.csv"}
    files["columns"] = root / "columns.csv"
    files["columns"].write_text("run_id,metric,value\nx,acc,1\n")
    files["binary"] = root / "binary.csv"
    files["binary"].write_bytes(b"\xff\xfe\x00junk" * 10)
    files["truncated"] = root / "truncated.csv.gz"
    files["truncated"].write_bytes(gzip.compress(text.encode())[:60])
    files["cells"] = root / "cells.csv"
    files["cells"].write_text(text.replace("\nmetric,", "\nbogus,", 1))
    files["value"] = root / "value.csv"
    lines = text.splitlines()
    cols = lines[0].split(",")
    first = lines[1].split(",")
    first[cols.index("seed")] = "one"
    files["value"].write_text("\n".join([lines[0], ",".join(first), *lines[2:]]) + "\n")
    files["empty"] = root / "empty.csv"
    files["empty"].write_bytes(b"")
    files["emptygz"] = root / "empty.csv.gz"
    files["emptygz"].write_bytes(gzip.compress(b""))
    files["header"] = root / "header.csv"
    files["header"].write_text(lines[0] + "\n")
    files["devnull"] = Path("/dev/null")
    files["fifo"] = root / "fifo.csv"
    os.mkfifo(files["fifo"])  # reading it would block: refused from its type alone
    files["conflict"] = root / "conflict.csv"
    files["conflict"].write_text(_other_value(text))
    files["disagree"] = root / "disagree.csv"
    files["disagree"].write_text(_last_row_edited(text, "seed", "7"))
    files["cut"] = root / "cut.csv"
    files["cut"].write_text(_cut_in_a_runs_first_row(text))
    rows = _rows(text)
    files["noend"] = root / "noend.csv"  # cut at a line end: every line whole, the end row gone
    files["noend"].write_text(_text(rows[: len(rows) // 2]))
    files["after"] = root / "after.csv"
    files["after"].write_text(_text([*rows, rows[1]]))
    files["histstep"] = root / "histstep.csv"  # a metric row turned into a history row: no step
    edited = [list(r) for r in rows]
    edited[_metric_row(rows)][rows[0].index("kind")] = "history"
    files["histstep"].write_text(_text(edited))
    files["removed"] = root / "removed.csv"  # every row of one run taken out: the end row's count says so
    rid = rows[1][rows[0].index("run_id")]
    files["removed"].write_text(_text([r for r in rows if r[rows[0].index("run_id")] != rid]))
    i, metric, value = _metric_row(rows), rows[0].index("metric"), rows[0].index("value")
    for name, (column, cell) in {"impossible": (value, "7.0"), "renamed": (metric, "accuracy@x2")}.items():
        edited = [list(r) for r in rows]
        edited[i][column] = cell
        files[name] = root / f"{name}.csv"
        files[name].write_text(_text(edited))
    return files


def _cut_in_a_runs_first_row(text: str) -> str:
    """The file as a copy that stopped in the middle of the first row of its second run: that
    row has fewer cells than the header, and no earlier row of its run to disagree with."""
    rows = _rows(text)
    cols = rows[0]
    first = rows[1][cols.index("run_id")]
    i = next(i for i, cells in enumerate(rows[1:], 1) if cells[cols.index("run_id")] != first)
    return _text(rows[:i]) + _text([rows[i][: len(cols) // 2]]).rstrip("\n")


def _last_row_edited(text: str, column: str, value: str) -> str:
    """The file with ``column`` set to ``value`` in the last row only of the run of the first
    metric row: the run's first row, which the record is rebuilt from, keeps its cell."""
    rows = _rows(text)
    cols = rows[0]
    rid = rows[_metric_row(rows)][cols.index("run_id")]
    last = max(
        i
        for i, cells in enumerate(rows)
        if cells[cols.index("run_id")] == rid and cells[cols.index("kind")] != "problem"
    )
    assert rows[last][cols.index(column)] != value
    rows[last][cols.index(column)] = value
    return _text(rows)


def _rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def _text(rows: list[list[str]]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue()


def _metric_row(rows: list[list[str]], metric: str = "acc@x2") -> int:
    """The index of the first row of ``metric`` (tiny's primary) of an ok run with a numeric value."""
    cols = rows[0]
    for i, cells in enumerate(rows[1:], 1):
        if (
            cells[cols.index("kind")] == "metric"
            and cells[cols.index("status")] == "ok"
            and cells[cols.index("metric")] == metric
        ):
            try:
                float(cells[cols.index("value")])
            except ValueError:
                continue
            return i
    raise AssertionError("no plain metric row")


def _recount(rows: list[list[str]]) -> list[list[str]]:
    """``rows`` (the header first, the end row last) with the end row's count of the rows above it
    made right again: an edit made as the writer would have made it."""
    end = list(rows[-1])
    end[rows[0].index("value")] = str(len(rows) - 2)
    return [*rows[:-1], end]


def _other_value(text: str) -> str:
    """The file with its first metric row again, with another value: two rows for one run and metric."""
    rows = _rows(text)
    cells = list(rows[_metric_row(rows)])
    value = rows[0].index("value")
    cells[value] = repr(float(cells[value]) + 0.25)
    return _text(_recount([*rows[:-1], cells, rows[-1]]))  # above the end row


@pytest.mark.parametrize(
    "which,words",
    [
        ("missing", ["--from", "no such file"]),
        ("columns", ["not a report's data file", "missing columns"]),
        ("binary", ["unreadable"]),
        ("truncated", ["unreadable"]),
        ("cells", ["is not a row of a report's data file"]),
        ("value", ["column seed", "'one'"]),
        ("header", ["holds no rows (a header only)"]),
        ("empty", ["empty (0 bytes): a copy or download that did not happen"]),
        ("noend", ["no end row (its last row, kind end, which a file of format 2 ends with): the file was cut short"]),
        ("after", ["a row after the end row", "rows were added to the file by hand"]),
        ("histstep", ["a history row needs a step and a metric (step '', metric 'acc@x2')"]),
        ("removed", ["rows above the end row, which says", "rows were taken out of the file or added to it"]),
        ("emptygz", ["empty (gzipped, 0 bytes inside)"]),
        ("devnull", ["/dev/null: not a regular file"]),
        ("fifo", ["not a regular file (a device, a FIFO or a socket)"]),
        ("conflict", ["has two different values of metric", "a data file holds one per run and metric"]),
        ("disagree", ["disagree on seed ('7' here, ", "every row of a run repeats its fields"]),
        (
            "impossible",
            ["acc@x2 = 7.0, where a run's acc@x2 is [0, 1] (fraction of scored tokens right)", "not edited"],
        ),
        ("renamed", ["'accuracy@x2' is not a metric ablate produces (did you mean 'acc@x2'", "not edited"]),
        (
            "cut",
            [
                "cells where the header has",
                "the file is cut short",
                "regenerate it with `ablate report tiny --profile ",
            ],
        ),
    ],
)
def test_bad_data_files_are_refused(store, tmp_path, which, words):
    decl, results = store
    out = tmp_path / "a"
    assert (
        invoke("report", str(decl), "--results-dir", str(results), "--out", str(out), "--wandb", "off").exit_code == 0
    )
    bad = _bad_files(tmp_path, out / "data" / "tiny.csv")[which]
    for command in ("report", "compare"):
        assert_refused(
            invoke(
                command,
                str(decl),
                "--from",
                str(bad),
                "--out" if command == "report" else "--format",
                str(tmp_path / "never") if command == "report" else "md",
            ),
            *words,
        )
    assert not (tmp_path / "never").exists()


def test_duplicate_rows_are_read_once_and_a_missing_value_is_counted(store, tmp_path):
    """An exact duplicate of a metric row is accepted (the same table); an ok run without a row
    for a metric its siblings have, or with a NaN value, is counted in ``excluded`` as
    ``1 without a value`` (it used to leave ``n`` one short with ``excluded`` 0), and the
    report's legend says what that means."""
    decl, results = store
    out = tmp_path / "a"
    assert (
        invoke("report", str(decl), "--results-dir", str(results), "--out", str(out), "--wandb", "off").exit_code == 0
    )
    rows = _rows((out / "data" / "tiny.csv").read_text())
    i = _metric_row(rows)
    same = tmp_path / "same.csv"
    same.write_text(_text(_recount([*rows[:-1], rows[i], rows[-1]])))  # above the end row
    md = ["--format", "md"]
    good = invoke("compare", str(decl), "--from", str(out / "data" / "tiny.csv"), *md)
    assert good.exit_code == 0 and "without a value" not in good.stdout
    assert invoke("compare", str(decl), "--from", str(same), *md).stdout == good.stdout
    dropped = tmp_path / "dropped.csv"
    dropped.write_text(_text(_recount(rows[:i] + rows[i + 1 :])))
    nan = list(rows[i])
    nan[rows[0].index("value")] = "nan"
    nanfile = tmp_path / "nan.csv"
    nanfile.write_text(_text([*rows[:i], nan, *rows[i + 1 :]]))
    for bad in (dropped, nanfile):
        got = invoke("compare", str(decl), "--from", str(bad), *md)
        assert got.exit_code == 0, got.output
        assert "1 without a value" in got.stdout
        rep = invoke("report", str(decl), "--from", str(bad), "--out", str(tmp_path / bad.stem), "--wandb", "off")
        assert rep.exit_code == 0, rep.output
        assert "`N without a value` (`excluded`)" in (tmp_path / bad.stem / "tiny.md").read_text()


@pytest.mark.parametrize("mode", ["offline", "online"])
def test_an_explicit_wandb_mode_with_from_is_refused(store, tmp_path, mode):
    """``--from`` reads no store, so it logs no W&B summary run: an explicit mode asked for one and
    was silently ignored; it is refused as with ``--all`` (the default, auto, and off are not)."""
    decl, results = store
    out = tmp_path / "a"
    assert (
        invoke("report", str(decl), "--results-dir", str(results), "--out", str(out), "--wandb", "off").exit_code == 0
    )
    data = str(out / "data" / "tiny.csv")
    assert_refused(
        invoke("report", str(decl), "--from", data, "--out", str(tmp_path / "never"), "--wandb", mode),
        f"--from writes no W&B summary run (--wandb {mode})",
        "drop --wandb",
    )
    assert not (tmp_path / "never").exists()
    assert invoke("report", str(decl), "--from", data, "--out", str(tmp_path / "b"), "--wandb", "off").exit_code == 0


def test_a_folder_is_refused_with_the_data_file_to_pass(store, tmp_path):
    """``--from reports`` (the folder ``ablate report`` wrote) names the data file in it; a
    folder without one says which file is expected; neither says "no such file"."""
    decl, results = store
    out = tmp_path / "a"
    assert (
        invoke("report", str(decl), "--results-dir", str(results), "--out", str(out), "--wandb", "off").exit_code == 0
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    for command in ("report", "compare"):
        tail = ["--out", str(tmp_path / "never")] if command == "report" else ["--format", "md"]
        for folder in (out, out / "data"):
            err = assert_refused(
                invoke(command, str(decl), "--from", str(folder), *tail),
                f"--from {folder}: is a folder, not a report's data file; pass one file, e.g. --from {out / 'data' / 'tiny.csv'}",
            )
            assert "no such file" not in err
        assert_refused(
            invoke(command, str(decl), "--from", str(empty), *tail),
            f"--from {empty}: is a folder, not a report's data file, and holds none of tiny; pass the file "
            "`ablate report tiny` wrote (reports/data/tiny[.PROFILE].csv[.gz])",
        )
    assert not (tmp_path / "never").exists()


def test_a_data_file_of_another_ablation_profile_or_grid_is_refused(store, tmp_path):
    decl, results = store
    out = tmp_path / "a"
    assert (
        invoke("report", str(decl), "--results-dir", str(results), "--out", str(out), "--wandb", "off").exit_code == 0
    )
    data = out / "data" / "tiny.csv"
    other = write_tiny(tmp_path / "decl2", name="tiny2")
    assert_refused(
        invoke("report", str(other), "--from", str(data), "--out", str(tmp_path / "n")),
        "holds runs of tiny, not of tiny2",
    )
    assert_refused(
        invoke(
            "report",
            str(decl),
            "--profile",
            "cpu",
            "--from",
            str(data),
            "model.d_model=32",
            "--out",
            str(tmp_path / "n"),
        ),
        "are not runs of the tiny / cpu grid",
    )
    assert_refused(invoke("compare", str(decl), "--from", str(data), "--tuned"), "drop --tuned")
    assert_refused(invoke("report", "--all", "--from", str(data)), "drop --all")
    assert not (tmp_path / "n").exists()


def test_plugins_travel_in_the_data_file_and_a_file_without_them_still_reads(tmp_path):
    decl = write_decl(tmp_path / "decl")
    results = tmp_path / "results"
    write_runs(results, decl, "pilot", lambda v, s: 0.5 + 0.02 * s)
    plugin = {"distribution": "my-plugin", "version": "1.2", "module": "my_plugin", "entries": ["position:xpos"]}
    for path in results.rglob("record.json"):
        path.write_text(json.dumps({**json.loads(path.read_text()), "plugins": [plugin]}))
    first, second = tmp_path / "a", tmp_path / "b"
    args = ["--profile", "pilot", "--out"]
    assert (
        invoke("report", str(decl), *args, str(first), "--results-dir", str(results), "--wandb", "off").exit_code == 0
    )
    original = (first / "mini.pilot.md").read_text()
    assert "- Plugins: my-plugin 1.2 (position:xpos).\n" in original
    data = first / "data" / "mini.pilot.csv"
    assert invoke("report", str(decl), *args, str(second), "--from", str(data)).exit_code == 0
    assert untimed((second / "mini.pilot.md").read_text()) == untimed(original)
    frame = pd.read_csv(data, keep_default_na=False, dtype=str)
    older = tmp_path / "older.csv"
    frame.drop(columns="plugins").to_csv(older, index=False)  # written before runs recorded plugins
    back = source.read_data(older, "mini", "pilot").scan
    assert back.records and all("plugins" not in r for r in back.records)


@pytest.mark.parametrize("gzipped", [False, True])
def test_a_data_file_saved_by_a_spreadsheet_reads_the_same(store, tmp_path, gzipped):
    """A UTF-8 byte-order mark and CRLF line ends (what spreadsheet tools write; the line breaks
    inside quoted cells become CRLF too) were refused: ``not a report's data file (missing columns
    ['kind'])``. Read back, the records are those of the file as written."""
    decl, results = store
    found = analyse_scan(decl, results)
    records = list(found.records)  # a reason over two lines: a quoted cell with a line break in it
    records[0] = records[0].model_copy(update={"reason": "loss is nan at step 7\n(last finite loss 2.5)"})
    report = tmp_path / "tiny.md"
    report_data.write_data(records, history_of(found, results), found.problems, results, report)
    written = report_data.data_path(report)
    plain = source.read_data(written, "tiny", None).scan
    assert plain.records[0]["reason"] == "loss is nan at step 7\n(last finite loss 2.5)"
    raw = written.read_bytes()
    text = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    assert b"\r" not in text
    saved = b"\xef\xbb\xbf" + text.replace(b"\n", b"\r\n")
    path = tmp_path / "saved" / ("tiny.csv.gz" if gzipped else "tiny.csv")
    path.parent.mkdir()
    path.write_bytes(gzip.compress(saved) if gzipped else saved)
    back = source.read_data(path, "tiny", None).scan
    assert back.records == plain.records and back.problems == plain.problems
    result = invoke("compare", str(decl), "--from", str(path))
    assert result.exit_code == 0, result.output
    assert result.stdout == invoke("compare", str(decl), "--from", str(written)).stdout


def analyse_scan(decl: Path, results: Path):
    from harness.analysis.comparisons import analyse

    return analyse(select(ablation_mod.load(str(decl)), "cpu", check_data=False), results).scan


def _edit_one_run(store, tmp_path: Path, column: str, value: str) -> tuple[Path, str, Path]:
    """The tiny report's data file with ``column`` set to ``value`` in every row of one run, as a
    hand edit would: ``(declaration, that run's id, the edited file)``."""
    decl, results = store
    out = tmp_path / "a"
    assert (
        invoke("report", str(decl), "--results-dir", str(results), "--out", str(out), "--wandb", "off").exit_code == 0
    )
    rows = _rows((out / "data" / "tiny.csv").read_text())
    cols = rows[0]
    rid = rows[_metric_row(rows)][cols.index("run_id")]
    for cells in rows[1:]:
        if cells[cols.index("run_id")] == rid and cells[cols.index("kind")] != "problem":
            cells[cols.index(column)] = value
    edited = tmp_path / "edited.csv"
    edited.write_text(_text(rows))
    return decl, rid, edited


@pytest.mark.parametrize(
    "column,value,words",
    [
        ("seed", "7", ["seed 7, where the grid's run has"]),
        ("variant", "position=alibi", ["variant 'position=alibi', where the grid's run has"]),
        ("config.train.lr", "0.5", ["config.train.lr 0.5, where the grid's run has"]),
    ],
)
def test_a_run_edited_by_hand_that_keeps_its_id_is_refused(store, tmp_path, column, value, words):
    """The run id is a hash of the run's seed, task and config: a data file whose run keeps its id
    but not what the id hashes would report numbers under a run they do not belong to."""
    decl, rid, edited = _edit_one_run(store, tmp_path, column, value)
    for command in ("report", "compare"):
        extra = ("--out", str(tmp_path / "never")) if command == "report" else ("--format", "md")
        assert_refused(
            invoke(command, str(decl), "--from", str(edited), *extra), f"run {rid} is not the run its id names", *words
        )
    assert not (tmp_path / "never").exists()


@pytest.mark.parametrize(
    "column,value,words",
    [
        (
            "ablation",
            "ffn_width",
            ["holds runs of ffn_width beside those of tiny", "regenerate it with `ablate report tiny`"],
        ),
        ("profile", "confirm", ["holds runs of profiles confirm, cpu", "a data file holds one profile"]),
    ],
)
def test_one_run_of_another_ablation_or_profile_names_the_mix(store, tmp_path, column, value, words):
    """An edited cell that moves one run to another ablation or profile is a file to regenerate, not a
    file of that other ablation (or a --profile to drop: none was passed)."""
    decl, _, edited = _edit_one_run(store, tmp_path, column, value)
    result = invoke("report", str(decl), "--from", str(edited), "--out", str(tmp_path / "never"))
    err = assert_refused(result, *words)
    assert "drop --profile" not in err


def test_a_config_column_deleted_is_named_as_missing(store, tmp_path):
    # without its column, a key reads its default: the message names the column, not a value never written
    decl, results = store
    out = tmp_path / "a"
    assert (
        invoke("report", str(decl), "--results-dir", str(results), "--out", str(out), "--wandb", "off").exit_code == 0
    )
    rows = _rows((out / "data" / "tiny.csv").read_text())
    drop = rows[0].index("config.train.steps")
    edited = tmp_path / "edited.csv"
    edited.write_text(_text([[c for i, c in enumerate(r) if i != drop] for r in rows]))
    assert_refused(
        invoke("report", str(decl), "--from", str(edited), "--out", str(tmp_path / "never")),
        "the file has no column config.train.steps (its default was read), where the grid's run has 20",
    )


def test_a_history_column_that_is_not_a_python_name_is_written(store, tmp_path):
    """``itertuples`` renamed a column such as ``acc@x1`` and the writer failed on it (a history
    restored from an edited file held one); the rows are now read by name."""
    from harness.store.runs import scan

    rec = next(r for r in scan(store[1], "tiny", "cpu").records if r.status == "ok")
    frame = pd.DataFrame({"step": [10, 20], "loss": [2.0, 1.5], "acc@x1": [0.25, 0.5]})
    path = report_data.write_data([rec], {rec.run_id: frame}, [], "results", tmp_path / "tiny.md")
    rows = pd.read_csv(path, keep_default_na=False, dtype=str)
    history = rows[rows["kind"] == "history"]
    assert list(zip(history["step"], history["metric"], history["value"], strict=True)) == [
        ("10", "loss", "2.0"),
        ("10", "acc@x1", "0.25"),
        ("20", "loss", "1.5"),
        ("20", "acc@x1", "0.5"),
    ]
