"""Non-finite statistics in every machine-readable output: each output parses
with a strict JSON parser, and an infinite value stays distinct from an undefined one.

Input: baseline [0.5, 0.6, 0.7], variant [0.75, 0.85, 0.95] paired by seed: every paired
difference is 0.25, so the t statistic and d_z are +inf (scipy's ``ttest_rel``), while the
baseline row's test columns are undefined (null)."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from typer.testing import CliRunner

from harness import encode
from harness.analysis.comparisons import analyse
from harness.cli.app import app
from harness.experiment.ablation import load
from harness.experiment.selection import select
from harness.report.bench import load as load_bench
from harness.report.tables import render
from harness.store.runs import load_record, write_json_atomic
from helpers.fake_store import bare_record, write_decl, write_runs

BASE = {0: 0.5, 1: 0.6, 2: 0.7}
VARIANT = {0: 0.75, 1: 0.85, 2: 0.95}


def strict(text: str):
    """``json.loads`` that raises on NaN, Infinity and -Infinity."""

    def refuse(name: str):
        raise ValueError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


def test_the_input_gives_infinite_statistics():
    res = sps.ttest_rel(list(VARIANT.values()), list(BASE.values()))
    assert math.isinf(res.statistic) and res.statistic > 0


def test_encoding_round_trip():
    values = [1.5, math.inf, -math.inf, math.nan, None, pd.NA, np.float64(np.inf), np.int64(3)]
    text = encode.dumps(values)
    assert strict(text) == [1.5, "Infinity", "-Infinity", None, None, None, "Infinity", 3]
    back = [encode.number(v) for v in strict(text)]
    assert back[:3] == [1.5, math.inf, -math.inf] and all(math.isnan(v) for v in back[3:6])
    with pytest.raises(ValueError):
        encode.number("inf ")
    frame = pd.DataFrame({"a": [math.inf, -math.inf, math.nan, 1.0], "b": ["x", None, "y", "z"]})
    assert pd.read_csv(io.StringIO(encode.to_csv(frame)))["a"].tolist()[:2] == [math.inf, -math.inf]
    assert encode.to_csv(frame).splitlines()[1:4] == ["Infinity,x", "-Infinity,", ",y"]


@pytest.fixture(scope="module")
def analysed(tmp_path_factory):
    root = tmp_path_factory.mktemp("inf")
    decl = write_decl(root / "decl", cpu={"seeds": [0, 1, 2]})
    results = root / "results"
    write_runs(
        results, decl, "cpu", lambda v, s: BASE[s] if v == "sinusoidal" else VARIANT[s] if v == "learned" else None
    )
    return decl, results, analyse(select(load(str(decl)), "cpu", check_data=False), results)


def _learned(rows: list[dict], metric: str = "acc@x2") -> dict:
    return next(r for r in rows if r["variant"] == "learned" and r["metric"] == metric)


def test_compare_json_and_csv_keep_inf_apart_from_undefined(analysed):
    _, _, result = analysed
    rows = strict(render(result.tables, "json"))
    row, base = _learned(rows), next(r for r in rows if r["variant"] == "sinusoidal")
    assert (row["t"], row["d_z"]) == ("Infinity", "Infinity")
    assert row["p"] == 0 and row["delta"] == pytest.approx(0.25)
    assert base["t"] is None and base["p"] is None  # undefined on the baseline row: null, not "Infinity"
    csv = pd.read_csv(io.StringIO(render(result.tables, "csv")))
    learned = csv[(csv["variant"] == "learned") & (csv["metric"] == "acc@x2")].iloc[0]
    assert learned["t"] == math.inf and learned["d_z"] == math.inf
    assert math.isnan(csv[csv["variant"] == "sinusoidal"].iloc[0]["t"])


def test_cli_compare_json_parses_strictly(analysed):
    decl, results, _ = analysed
    out = CliRunner().invoke(app, ["compare", str(decl), "--results-dir", str(results), "--format", "json"])
    assert out.exit_code == 0, out.output
    assert _learned(strict(out.stdout))["t"] == "Infinity"


def test_wandb_summary_tables_parse_strictly(analysed, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from harness.cli.report import log_summary

    monkeypatch.setenv("WANDB_SILENT", "true")
    _, _, result = analysed
    run = log_summary(result, {}, [], "offline")
    files = sorted(Path(run).parent.rglob("*.table.json")) + sorted((tmp_path).rglob("*.table.json"))
    assert files
    for f in files:
        doc = strict(f.read_text())
        if "t" in doc.get("columns", []):
            col = doc["columns"].index("t")
            assert [r[col] for r in doc["data"]] == [None, "Infinity"]


def test_record_and_bench_files_parse_strictly(tmp_path: Path):
    run = tmp_path / "run"
    record = bare_record(
        run_id="run", status="ok", metrics={"loss": math.inf, "gain": -math.inf, "acc": math.nan, "ok": 1.0}
    )
    write_json_atomic(run / "record.json", record)
    assert strict((run / "record.json").read_text())["metrics"] == {
        "loss": "Infinity",
        "gain": "-Infinity",
        "acc": None,
        "ok": 1.0,
    }
    rec, problem = load_record(run)
    assert problem is None
    assert rec.metrics["loss"] == math.inf and rec.metrics["gain"] == -math.inf and math.isnan(rec.metrics["acc"])
    bench = tmp_path / "bench" / "attention-cpu-float32.json"
    write_json_atomic(
        bench,
        {
            "rows": [
                {
                    "kernel": "sdpa",
                    "seq_len": 8,
                    "status": "ok",
                    "ms_fwd_bwd": 0.0,
                    "tokens_per_s": math.inf,
                    "peak_mib": math.nan,
                }
            ]
        },
    )
    assert strict(bench.read_text())["rows"][0]["tokens_per_s"] == "Infinity"
    ((_, doc),) = load_bench(tmp_path / "bench")
    assert doc["rows"][0]["tokens_per_s"] == math.inf and doc["rows"][0]["peak_mib"] is None


# ---------------------------------------------------------------- numbers for people (item 14)


def test_text_never_prints_nan_or_inf():
    assert [encode.text(v, "+.4g") for v in (math.nan, None, pd.NA, math.inf, -math.inf, 0.25)] == [
        "–",
        "–",
        "–",
        "+∞",
        "-∞",
        "+0.25",
    ]


@pytest.fixture(scope="module")
def one_pair(tmp_path_factory):
    """The infinite-t store, plus `rope` with one seed only: a comparison with one pair."""
    root = tmp_path_factory.mktemp("onepair")
    decl = write_decl(root / "decl", cpu={"seeds": [0, 1, 2]})
    results = root / "results"

    def value(v: str, s: int):
        return BASE[s] if v == "sinusoidal" else VARIANT[s] if v == "learned" else (0.4 if s == 0 else None)

    write_runs(results, decl, "cpu", value)
    return decl, results, analyse(select(load(str(decl)), "cpu", check_data=False), results)


def test_claim_line_says_why_a_comparison_has_no_ci_or_p(one_pair):
    from harness.analysis.claims import claim_verdict
    from helpers.mini_claims import claim_of

    _, _, result = one_pair
    claim = claim_of(evidence=[{"task": "copy", "metric": "acc@x2", "variant": "rope", "expect": "better"}])
    verdict, (line,) = claim_verdict(claim, result)
    assert "nan" not in line and "inf" not in line
    assert "95% CI – (one pair: no spread to test)" in line and "adjusted p = – (one pair" in line
    assert "n = 1 seed → too few pairs" in line and verdict == "inconclusive"


def test_report_prints_no_nan_or_inf(one_pair, tmp_path: Path):
    import re

    from harness.cli.report import report as write_report

    decl, results, result = one_pair
    text = write_report(str(decl), "cpu", results, tmp_path).read_text()
    assert not re.search(r"\b(nan|NaN|inf|Infinity)\b", text)
    learned = next(line for line in text.splitlines() if line.startswith("| learned") and "∞" in line)
    assert re.search(r"\|\s*∞\s*\|", learned)  # d_z of identical non-zero differences


def test_count_is_plural_unless_one() -> None:
    assert [encode.count(n, "seed") for n in (0, 1, 2)] == ["0 seeds", "1 seed", "2 seeds"]


def test_short_question_keeps_the_first_sentence():
    assert encode.short_question("Does it work?  More detail follows.") == "Does it work?"
    long = "Which " + "very " * 40 + "long question?"
    assert encode.short_question(long).endswith(" …") and len(encode.short_question(long)) <= 102
