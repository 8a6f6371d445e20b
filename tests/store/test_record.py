"""The typed run record reads every record the harness wrote before it and writes it back byte for
byte: keys left out stay out, nulls stay null, unknown keys are kept, numbers keep the strict encoding."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from harness.store.record import Record, parse_record
from harness.store.runs import load_record, write_record
from helpers.fake_store import BARE_CONFIG, bare_record

PREMOVE = Path(__file__).resolve().parents[1] / "fixtures" / "premove" / "results"


@pytest.mark.parametrize("path", sorted(PREMOVE.glob("*/*/*/record.json")), ids=lambda p: p.parent.name)
def test_records_written_before_read_and_write_back_identically(path: Path, tmp_path: Path) -> None:
    rec, problem = load_record(path.parent)
    assert problem is None and rec.status == "ok" and "target" not in rec.model_fields_set and rec.reused_from is None
    write_record(tmp_path, rec)
    assert (tmp_path / "record.json").read_bytes() == path.read_bytes()


def test_absent_and_null_keys_stay_apart() -> None:
    old = bare_record(status="timeout", reason="over 5 s", timeout_step=3)
    rec, _ = parse_record(old)
    assert "target" not in rec.model_fields_set and rec.target is None and rec.metrics is None
    assert rec.to_json() == old  # no metrics key for a timeout, no target key from before reuse
    rec, _ = parse_record({**old, "target": None})
    assert "target" in rec.model_fields_set and rec.to_json()["target"] is None


def test_unknown_keys_and_strict_numbers_round_trip(tmp_path: Path) -> None:
    # written before the strict encoding (bare NaN / Infinity), with a field of an older harness
    old = json.dumps(
        bare_record(status="ok", train_time_s=1.5, metrics={"acc@x1": math.nan, "loss@x1": math.inf, "n": 2})
    )
    assert "NaN" in old and "Infinity" in old
    (tmp_path / "r1").mkdir()
    (tmp_path / "r1" / "record.json").write_text(old)
    rec, problem = load_record(tmp_path / "r1")
    assert problem is None and rec.model_extra == {"train_time_s": 1.5} and rec.train_time_s == 1.5
    assert math.isnan(rec.metric("acc@x1")) and rec.metric("loss@x1") == math.inf and rec.metric("n") == 2.0
    assert rec.metric("ppl@x1") is None
    write_record(tmp_path / "r1", rec)
    again = json.loads((tmp_path / "r1" / "record.json").read_text())  # strict: null and "Infinity"
    assert again["metrics"] == {"acc@x1": None, "loss@x1": "Infinity", "n": 2.0} and again["train_time_s"] == 1.5


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"status": "leased"}, "status 'leased' is not one of ok, stalled, diverged, failed, timeout"),
        ({"seed": True}, "field 'seed'"),
        ({"task": None}, "field 'task'"),
        ({"config": {**BARE_CONFIG, "model": {}}}, "config.model missing or incomplete"),
        ({"metrics": {"acc": "high"}}, "metrics must map names to numbers"),
        ({"metrics": {"acc": True}}, "metrics must map names to numbers"),
        ({"metrics": None}, "an ok record without metrics"),
    ],
)
def test_what_readers_cannot_use_is_a_problem_not_an_exception(change: dict, why: str) -> None:
    rec, problem = parse_record(bare_record(**{"status": "ok", "metrics": {}, **change}))
    assert rec is None and why in problem


def test_a_record_is_frozen() -> None:
    rec = Record.model_validate(bare_record(status="failed", reason="boom"))
    with pytest.raises(Exception, match="frozen"):
        rec.status = "ok"
    assert rec.reason == "boom" and rec.where == "a/p/r1"
    assert rec.n_params is None and "n_params" not in rec.to_json()  # not held: None, and not written
