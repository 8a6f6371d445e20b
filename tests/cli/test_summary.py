"""The comparison a terminal shows at the end of ``ablate run`` (and ``ablate compare``): the
columns a reader decides from, fitted to the terminal's width without breaking a number or a
variant name, then what the profile can say and the commands that come next. Rendered as a person
sees it: a rich console of 100 and of 80 columns."""

from __future__ import annotations

import re

import pandas as pd
import pytest
from rich.console import Console

from harness.analysis import verdicts as vd
from harness.analysis.table import Table
from harness.cli.compare import closing_lines
from harness.experiment.ablation import load
from harness.experiment.selection import select
from harness.report.tables import SUMMARY, render, summary_frame
from helpers.cli import invoke
from helpers.fake_store import write_decl, write_runs


def _row(variant: str, mean: float, verdict: str, **more) -> dict:
    return {"variant": variant, "n": 8, "planned": 8, "mean": mean, "sd": 0.01234, "verdict": verdict, **more}


def _tables(variant_names: tuple[str, ...] = ("sinusoidal", "learned", "rope")) -> list[Table]:
    """Two tables with long numbers and the longest verdicts the vocabulary writes."""
    base, *others = variant_names
    verdicts = [vd.underpowered(23), vd.inconclusive(perm_p_adj=0.0625), vd.PILOT, vd.BETTER]
    rows = [_row(base, 0.06687, vd.BASELINE, ci_low=0.0512, ci_high=0.1088)]
    for i, name in enumerate(others):
        rows.append(
            _row(
                name,
                0.10881 + i,
                verdicts[i % len(verdicts)],
                delta=-0.0420 - i,
                delta_ci_low=-0.06687,
                delta_ci_high=-0.017,
                p_adj=0.0123,
                wins=1,
                ties=2,
                losses=5,
                d_z=-1.234,
                p=0.004,
                mde=0.0321,
                n_params=123456,
                wall_time_s=61.2,
            )
        )
    frame = pd.DataFrame(rows)
    return [
        Table("copy", "acc@x4", True, "primary (Holm over 8 comparisons)", frame),
        Table("tinyshakespeare", "loss@x4", False, "primary (Holm over 8 comparisons)", frame.copy()),
    ]


def _shown(tables: list[Table], width: int) -> list[str]:
    console = Console(width=width, record=True, color_system=None, force_terminal=False)
    console.print(render(tables, "table", console))
    return console.export_text().splitlines()


def _columns(header: str) -> list[str]:
    return re.split(r"\s{2,}", header.strip())


def _assert_whole(tables: list[Table], lines: list[str], width: int) -> None:
    assert max(len(line.rstrip()) for line in lines) <= width, "\n".join(lines)
    for t in tables:
        frame = summary_frame(t)
        header = next(i for i, line in enumerate(lines) if line.startswith("variant"))
        columns = _columns(lines[header])
        assert {"variant", "Δ (+ = better) [95% CI]", "verdict"} <= set(columns), lines[header]
        for _, row in frame.iterrows():
            for column in columns:
                for word in row[column].split():  # every number and name, whole on one line
                    assert any(word in line for line in lines), (column, word, "\n".join(lines))


@pytest.mark.parametrize("width", [100, 80])
def test_the_summary_fits_the_terminal_and_breaks_no_number(width):
    tables = _tables()
    lines = _shown(tables, width)
    _assert_whole(tables, lines, width)
    assert sum("0.06687" in line for line in lines) >= 2  # a number of the CI, whole
    assert any("needs 23 seeds)" in line or "23" in line.split() for line in lines)


def test_at_100_columns_every_summary_column_is_shown():
    header = next(line for line in _shown(_tables(), 100) if line.startswith("variant"))
    assert _columns(header) == list(SUMMARY)


def test_a_narrow_terminal_drops_columns_in_order_not_digits():
    lines = _shown(_tables(), 60)
    header = next(line for line in lines if line.startswith("variant"))
    assert _columns(header) == ["variant", "Δ (+ = better) [95% CI]", "p adj", "verdict"]
    _assert_whole(_tables(), lines, 60)


def test_a_long_variant_name_stays_whole_at_80_columns():
    names = ("norm=layernorm,norm_position=pre", "norm=rmsnorm,norm_position=post", "norm=none,norm_position=pre")
    tables = _tables(names)
    lines = _shown(tables, 80)
    _assert_whole(tables, lines, 80)


def _pilot_and_confirm(tmp_path):
    decl = write_decl(
        tmp_path / "decl",
        pilot={"seeds": [0, 1], "confirmatory": False},
        cpu={"seeds": [0, 1, 2, 3]},
    )
    return load(str(decl)), decl


def test_a_pilot_says_it_gives_no_verdict_and_what_to_run_next(tmp_path):
    abl, decl = _pilot_and_confirm(tmp_path)
    results = tmp_path / "results"
    lines = closing_lines(
        abl, "pilot", results, select(abl, "pilot", check_data=False, typed=str(decl), results=results)
    )
    text = "\n".join(lines)
    assert "pilot profile (confirmatory: false): it gives no verdicts" in text
    assert f"`ablate report {decl} --profile pilot --results-dir {results}` writes reports/mini.pilot.md" in text
    assert f"; `ablate run {decl} --profile cpu --results-dir {results}` runs the confirmatory profile: 12 runs" in text


def test_the_next_profile_s_time_comes_from_its_stored_runs(tmp_path):
    """4 of the 12 cpu runs in the store at 90 s each: the other 8 take ~12 min on one worker."""
    abl, decl = _pilot_and_confirm(tmp_path)
    results = tmp_path / "results"
    written = write_runs(results, decl, "cpu", lambda v, s: 0.5 if s == 0 else None, wall=lambda v, s: 90.0)
    assert written == 3
    lines = closing_lines(
        abl, "pilot", results, select(abl, "pilot", check_data=False, typed=str(decl), results=results)
    )
    assert lines[-1].endswith(
        "runs the confirmatory profile: 12 runs, 3 in the store; ~14 min for the 9 others on one worker "
        "(median 90 s per run of the 3)"
    ), lines[-1]


def test_a_confirmatory_profile_says_what_its_verdicts_mean(tmp_path):
    abl, decl = _pilot_and_confirm(tmp_path)
    results = tmp_path / "results"
    lines = closing_lines(abl, "cpu", results, select(abl, "cpu", check_data=False, typed=str(decl), results=results))
    assert "cpu is a fixed design: better, worse or equivalent where the deciding interval" in lines[1]
    assert lines[-1] == f"next: `ablate report {decl} --profile cpu --results-dir {results}` writes reports/mini.md"


def test_a_group_sequential_profile_says_its_own_rule(tmp_path):
    """Not the fixed design's t-test with the sign-flip check: the deciding interval of the look."""
    decl = write_decl(tmp_path / "decl", cpu={"seeds": [0, 1, 2, 3], "sequential": {"looks": [2, 4]}})
    abl, results = load(str(decl)), tmp_path / "results"
    lines = closing_lines(abl, "cpu", results, select(abl, "cpu", check_data=False, typed=str(decl), results=results))
    assert "cpu is group-sequential: better, worse or equivalent where the deciding interval" in lines[1]
    assert "sign-flip" not in lines[1]


def test_ablate_run_piped_ends_with_the_narrow_table_and_the_next_commands(tmp_path):
    """Every run in the store: ``ablate run`` prints the comparison (markdown, when piped) and the
    closing lines; no line is wider than 100 characters but the commands it names."""
    _, decl = _pilot_and_confirm(tmp_path)
    results = tmp_path / "results"
    write_runs(results, decl, "pilot", lambda v, s: 0.5 + 0.01 * s + (0.1 if v == "rope" else 0))
    out = invoke("run", str(decl), "--profile", "pilot", "--results-dir", str(results))
    assert out.exit_code == 0, out.output
    lines = out.stdout.splitlines()
    table = [line for line in lines if line.startswith("|")]
    assert table and max(map(len, table)) <= 100, "\n".join(table)
    assert [cell.strip() for cell in table[0].split("|")[1:-1]] == list(SUMMARY)
    assert "| sinusoidal |" in out.stdout and "baseline" in out.stdout
    assert lines[-1].startswith("next: `ablate report") and "12 runs" in lines[-1]  # every run finished


def test_a_terminal_wraps_long_lines_between_words(monkeypatch):
    """In a terminal the console wraps a line longer than its width between words (the terminal
    itself would cut ``ETA 5m14s`` into ``ETA 5`` / ``m14s``); piped, lines stay whole."""
    import importlib
    import io
    import sys

    from harness.cli import output

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    line = "[10/20] ok       tinyshakespeare nope       seed 0 loss@x4=3.7061 (1s; ETA 0m17s) " * 2
    try:
        monkeypatch.setattr(sys, "stdout", Terminal())
        importlib.reload(output)
        console = output.console
        console.width = 80
        with console.capture() as captured:
            console.print(line)
        shown = captured.get().splitlines()
        assert len(shown) > 1 and all(len(s) <= 80 for s in shown)
        assert all(word in "\n".join(shown).split() for word in line.split())
    finally:
        monkeypatch.undo()
        importlib.reload(output)
    assert output.console.soft_wrap  # piped again (pytest captures stdout)


def test_runs_left_out_are_said_in_the_verdict_cell(tmp_path):
    """Every run below the gate (a smoke-sized copy run): the table has no statistics and no
    verdict column; the summary says why each variant has no numbers, where the verdict is."""
    frame = pd.DataFrame(
        [{"variant": v, "below_gate": 2, "not_ok": 0, "no_value": 0, "planned": 2} for v in ("sinusoidal", "rope")]
    )
    tables = [Table("copy", "acc@x4", True, "primary", frame)]
    assert summary_frame(tables[0])["verdict"].to_list() == ["–; 2 below gate"] * 2
    _assert_whole(tables, _shown(tables, 80), 80)
