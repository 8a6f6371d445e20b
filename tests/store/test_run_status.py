"""A run's status (:class:`RunStatus`) is its text wherever it goes: in sets and dicts of strings, in pandas columns,
in f-strings and in ``record.json``; its predicates sort the five statuses as ``ablate run`` and the reports do."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from harness.errors import TRAINED, Diverged, RunFailed, RunStatus, TimedOut
from harness.execution.launch import FAILURES, parse_retry
from harness.store.record import parse_record
from harness.store.runs import write_record
from helpers.fake_store import bare_record

TEXTS = ("ok", "stalled", "diverged", "failed", "timeout")


def test_a_status_hashes_and_compares_as_its_text() -> None:
    assert RunStatus("ok") in {"ok"} and "ok" in {RunStatus.OK} and {"ok": 1}[RunStatus.OK] == 1
    assert RunStatus.STALLED == "stalled" and RunStatus.OK != "stalled" and tuple(RunStatus) == TEXTS
    assert pd.Series(["ok", "stalled", "failed"]).isin(TRAINED).tolist() == [True, True, False]
    assert pd.Series(list(RunStatus)).isin(["ok", "diverged"]).tolist() == [True, False, True, False, False]


def test_a_status_prints_as_its_text() -> None:
    s = RunStatus.DIVERGED
    assert (str(s), f"{s}", f"{s:>9}", "%s" % s, ", ".join(RunStatus)) == (  # noqa: UP031  as old code formats it
        "diverged",
        "diverged",
        " diverged",
        "diverged",
        ", ".join(TEXTS),
    )
    assert pd.DataFrame({"status": [s]}).to_csv(index=False) == "status\ndiverged\n"


def test_predicates() -> None:
    assert [s for s in RunStatus if s.trained] == ["ok", "stalled"] and TRAINED == ("ok", "stalled")
    assert [s for s in RunStatus if s.result] == ["ok", "stalled", "diverged"]
    assert [s for s in RunStatus if s.failure] == ["failed", "timeout"] and FAILURES == ("failed", "timeout", "crashed")
    assert (RunFailed(ValueError("x")).status, Diverged(3, 1.0).status, TimedOut(3, 2.0, 1.0).status) == (
        RunStatus.FAILED,
        RunStatus.DIVERGED,
        RunStatus.TIMEOUT,
    )


@pytest.mark.parametrize("text", TEXTS)
def test_every_stored_status_loads_and_is_written_as_its_text(text: str, tmp_path) -> None:
    rec, problem = parse_record(bare_record(status=text, metrics={"loss@x1": 1.0}))
    assert problem is None and rec.status is RunStatus(text)
    assert type(rec.to_json()["status"]) is str and rec.to_json()["status"] == text
    write_record(tmp_path, rec)
    assert f'"status": "{text}"' in (tmp_path / "record.json").read_text()
    assert parse_record(json.loads((tmp_path / "record.json").read_text())) == (rec, None)


def test_retry_takes_the_statuses_that_are_not_ok_as_text() -> None:
    assert parse_retry("failed, diverged,failed") == ("failed", "diverged")
    assert all(type(s) is str for s in parse_retry("stalled,timeout"))
