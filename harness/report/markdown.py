"""Markdown reports: question, claims with verdicts, setup, comparison tables, figures, failures,
and the command that reproduces it. Every figure is computed from the run store."""

from __future__ import annotations

import math
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from harness.analysis import verdicts as vd
from harness.analysis.comparisons import Analysis, analyse, beyond_training, claimed_metrics, why_not_finished
from harness.encode import text
from harness.experiment import claims as claims_mod
from harness.experiment import metrics
from harness.experiment.ablation import Ablation
from harness.experiment.config import FFNSection
from harness.experiment.versions import mix_warning
from harness.report import figures
from harness.report.bench import bench_section
from harness.report.data import history_of, run_history, write_data
from harness.report.omnibus import across_variants
from harness.report.probes import probe_section
from harness.report.tables import markdown, title
from harness.report.tuning import tuning_section
from harness.store.record import Record


def report_path(abl: Ablation, profile: str, out: Path) -> Path:
    """``out/NAME.md`` for the ablation's default profile, ``out/NAME.PROFILE.md`` otherwise."""
    suffix = "" if profile == abl.default_profile else f".{profile}"
    return Path(out) / f"{abl.name}{suffix}.md"


def claim_verdict(claim: dict[str, Any], result: Analysis) -> tuple[str, list[str]]:
    """Verdict (supported / partly supported / contradicted / partly contradicted / mixed /
    inconclusive / pilot / not tested in this profile) and one evidence line per entry.

    Each evidence entry names a comparison (task, metric, variant vs the baseline) and the
    verdict expected if the claim holds (better, worse or equivalent). Equivalence within the
    smallest effect of interest, the same outcome in every pair, or identical values in every
    pair contradict a claim of a difference. Entries outside the profile's grid are listed and
    left out of the verdict.
    """
    lines, outcomes, small_effects = [], [], []
    abl = result.ablation.for_profile(result.profile)
    labels = {abl.label(v) for v in abl.variants()}
    for ev in claim.get("evidence", []):
        if ev["task"] not in abl.tasks or ev["variant"] not in labels:
            lines.append(
                f"{ev['task']} {ev['metric']}, {ev['variant']} vs {abl.baseline_label}: not in the "
                f"`{result.profile}` profile's grid (see the ablation's other profiles)"
            )
            continue
        table = result.table(ev["task"], ev["metric"])
        row = None if table is None else table.frame[table.frame["variant"] == ev["variant"]]
        if row is not None and not row.empty and vd.kind(row.iloc[0].get("verdict")) is vd.Kind.NOT_LEARNED:
            outcomes.append("untestable")  # no verdict from a task the baseline (or the variant) did not learn
            lines.append(
                f"{ev['task']} `{ev['metric']}`, {ev['variant']} vs {abl.baseline_label}: {row.iloc[0]['verdict']}; "
                f"claim expects {ev['expect']}: **untestable at this scale**"
            )
            continue
        if row is None or row.empty or pd.isna(row.iloc[0].get("delta")):
            outcomes.append("not run")
            lines.append(f"{ev['task']} {ev['metric']}, {ev['variant']} vs {abl.baseline_label}: no paired runs")
            continue
        r = row.iloc[0]
        v = str(r["verdict"])
        outcome = (
            "pilot"
            if vd.kind(v) is vd.Kind.PILOT
            else "supported"
            if vd.matches(v, ev["expect"])
            else "contradicted"
            if vd.rules(v)
            else "inconclusive"
        )
        outcomes.append(outcome)
        head = (
            f"{ev['task']} `{ev['metric']}`, {ev['variant']} vs {abl.baseline_label}"
            + (f" (this comparison tests {ev['tests']})" if ev.get("tests") else "")
            + ": "
        )
        if ev["metric"] == metrics.OUTCOME:
            base = table.frame.iloc[0]
            why = _failure_reasons(result, ev["task"], ev["variant"])
            lines.append(
                head + f"finished {r['mean'] * r['n']:.0f}/{r['n']} runs vs {base['mean'] * base['n']:.0f}/{base['n']}"
                f"{why}; exact McNemar p = {text(r['p'], '.3g')}, adjusted p = {text(r['p_adj'], '.3g')} "
                f"({table.family}) → {v}; claim expects {ev['expect']}: **{outcome}**"
            )
            continue
        small = ""
        if outcome == "supported" and vd.kind(v) in vd.DIRECTIONS and table.sesoi and abs(r["delta"]) < table.sesoi:
            small_effects.append(table.sesoi)  # real, but smaller than the effect the ablation cares about
            small = f" (|Δ| below the smallest effect of interest {table.sesoi:g})"
        undefined = _why_undefined(r)  # no CI or p to print: say why instead of "nan"
        ci = (
            f"95% CI [{text(r['delta_ci_low'], '+.4g')}, {text(r['delta_ci_high'], '+.4g')}] (not adjusted)"
            if undefined is None
            else f"95% CI – ({undefined})"
        )
        p_adj = f"{text(r['p_adj'], '.3g')} ({table.family})" if undefined is None else f"– ({undefined})"
        lines.append(
            head + f"Δ = {text(r['delta'], '+.4g')} ({ci}, + = {ev['variant']} better), "
            f"adjusted p = {p_adj}, n = {r['n_pairs']} seed{'' if r['n_pairs'] == 1 else 's'} → {v}; "
            f"claim expects {ev['expect']}: **{outcome}**{small}"
        )
    if not claim.get("evidence"):
        return vd.ClaimKind.NOT_TESTED_YET.value, lines
    if not outcomes:
        return vd.ClaimKind.NOT_TESTED.value, lines
    counts = Counter(outcomes)
    if counts["pilot"]:
        return vd.claim_pilot(), lines
    if counts["supported"] and not counts["contradicted"]:
        # in direction only: every supporting effect is below the sesoi
        return vd.claim_supported(
            counts["supported"] == len(outcomes), len(small_effects) == counts["supported"]
        ), lines
    if counts["contradicted"] and not counts["supported"]:
        return vd.claim_contradicted(counts["contradicted"] == len(outcomes)), lines
    if counts["supported"] and counts["contradicted"]:
        return vd.claim_mixed(counts["supported"], counts["contradicted"]), lines
    if counts["untestable"] == len(outcomes):
        return vd.ClaimKind.UNTESTABLE.value, lines
    return vd.ClaimKind.INCONCLUSIVE.value, lines


def _why_undefined(row: pd.Series) -> str | None:
    """Why a comparison has no test (hence no CI or p), or None when it has one."""
    n = 0 if pd.isna(row.get("n_pairs")) else int(row["n_pairs"])
    if n < 2:
        return "no pairs" if n == 0 else "one pair: no spread to test"
    if pd.isna(row.get("p_adj")):
        return "no pair differs" if row.get("ties") == n else "the test is undefined"
    return None


def write_report(
    abl: Ablation,
    profile: str,
    results: Path,
    out: Path,
    data_dir: Path | None = None,
    storage: str | None = None,
    expected: set[str] | None = None,
    overrides: list[str] | None = None,
    result: Analysis | None = None,
    data: bool = True,
) -> Path:
    """Write the markdown report and its PNG figures under ``out``; returns the markdown path.
    ``data``: also write the tidy table of its runs, ``out/data/NAME[.PROFILE].csv[.gz]``
    (:mod:`harness.report.data`), from which ``ablate report --from`` makes the same report.

    ``storage``: the Optuna storage URL of a "Tuning" section (default ``<results>/optuna.db``);
    the section appears when that storage holds studies of this ablation and profile.
    ``result``: the analysis of this ablation and profile when the caller already has it (the
    W&B summary run logs the same one); None: read the store here."""
    abl = abl.for_profile(profile)
    result = result or analyse(abl, profile, results, expected=expected)
    path = report_path(abl, profile, out)
    fig_dir = Path(out) / "figures"
    fig_dir.mkdir(parents=True, exist_ok=True)
    records = result.scan.records
    parts = [
        f"# {abl.name} ({profile} profile)",
        "",
        f"*Generated by `ablate report {abl.name} --profile {profile}` on "
        f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC from {len(records)} runs in `{results}`.*",
        "",
        "## Question",
        "",
        abl.question,
        "",
    ]
    parts += _version_warnings(result)
    parts += _aa_section(result) if abl.identical_arms else _claims_section(abl, result)
    parts += _setup_section(abl, profile, records)
    parts += _results_section(abl, profile, result, fig_dir, path.parent)
    parts += probe_section(result)  # leakage / masked attention probes per cell, where runs carry them
    parts += _failures_section(result)
    parts += _tuning_section(abl, profile, results, storage, fig_dir, path.parent)
    parts += bench_section(abl, results, fig_dir, path.parent)  # attention kernels: `ablate bench attention`
    if abl.notes:
        parts += ["## Notes on the design", "", abl.notes, ""]
    parts += ["## Reproduce", "", "```", *_commands(abl, profile, overrides or []), "```", ""]
    path.write_text("\n".join(parts))
    if data:
        write_data(records, history_of(result.scan, results), result.scan.problems, results, path)
    return path


def _tuning_section(
    abl: Ablation, profile: str, results: Path, storage: str | None, fig_dir: Path, md_dir: Path
) -> list[str]:
    return tuning_section(abl, profile, results, storage, fig_dir, md_dir)


def _aa_section(result: Analysis, alpha: float = 0.05) -> list[str]:
    """An A/A check's verdict on the harness: how many comparisons between identical arms were
    declared different (each a false positive), against what alpha allows."""
    lines = ["## A/A check: false positives", ""]
    for label, tables in (
        ("primary metric", [t for t in result.tables if t.family.startswith("primary")]),
        ("every metric", result.tables),
    ):
        frames = [t.frame.iloc[1:] for t in tables if "p" in t.frame]
        tested = sum(int(f["p"].notna().sum()) for f in frames)
        declared = sum(int(f["verdict"].isin([vd.BETTER, vd.WORSE]).sum()) for f in frames)
        raw = sum(int((f["p"] < alpha).sum()) for f in frames)
        lines.append(
            f"- {label}: **{declared} of {tested}** comparisons between identical arms declared better or "
            f"worse after adjustment; raw p < {alpha:g} in {raw} of {tested} (expected about "
            f"{alpha * tested:.2g} by chance)."
        )
    lines += [
        "",
        "Every such declaration is a false positive. The long-run rate is measured by a simulation of "
        "1,000 A/A tables in the test suite (`tests/analysis/test_stats.py::test_aa_false_positive_rate`).",
        "",
    ]
    return lines


def _failure_reasons(result: Analysis, task: str, variant: str) -> str:
    """`` (n status: reason)`` of the variant's most common way of not finishing."""
    runs = result.runs[(result.runs["task"] == task) & (result.runs["variant"] == variant)]
    common = why_not_finished(list(runs["status"]), list(runs["reason"]))
    return f" ({common[0][1]} {common[0][0]})" if common else ""


def _claims_section(abl: Ablation, result: Analysis) -> list[str]:
    claims = claims_mod.load_claims()
    prof = abl.profiles[result.profile]
    lines = ["## Claims", ""]
    for cid in abl.claims:
        claim = claims.get(cid, {"claim": "(not in harness/experiment/claims.yaml)", "figure": "none"})
        verdict, evidence = claim_verdict(claim, result)
        lines += [
            f"### `{cid}`: {verdict}",
            "",
            f"> {claim['claim']} (figure given: {claim.get('figure', 'none')})",
            "",
        ]
        lines += [f"- {e}" for e in evidence]
        lines.append("")
    scale: dict[str, dict[str, Any]] = {}
    for rec in result.scan.records:
        scale.setdefault(rec.task, rec.config)
    desc = "; ".join(
        f"{t}: d_model {c['model']['d_model']}, {c['model']['n_layers']} layers, "
        f"{c['train']['steps']} steps, L = {c['train']['seq_len']}"
        for t, c in scale.items()
    )
    lines += [
        f"Scale caveat: these verdicts hold at the scale run here ({desc}; {len(prof.seeds)} seeds), "
        "not necessarily at the scale where the claims were made.",
        "",
    ]
    lines += _unlearned_warnings(abl, result)
    return lines


def _version_warnings(result: Analysis) -> list[str]:
    """A loud line for every task whose compared runs were made by different code versions."""
    return [f"**Warning: {mix_warning(task, mix)}.**\n" for task, mix in result.mixed_code.items()]


def _unlearned_warnings(abl: Ablation, result: Analysis) -> list[str]:
    """A loud line for every task whose baseline reached its convergence target on at most half of
    its planned seeds (:func:`harness.analysis.comparisons.unlearned_tasks`): at such a scale no
    comparison on the task gets a verdict, and the line says why the tables read ``not learned``."""
    out = []
    confirmatory = abl.profiles[result.profile].confirmatory
    for task, (reached, planned) in result.unlearned.items():
        why = (
            f"so no comparison on it gets a verdict: each reads `{vd.not_learned_target(reached, planned)}`"
            if confirmatory
            else "and a confirmatory run at this scale would give no verdict on it"
        )
        out += [
            f"**Warning: on `{task}` the baseline reached the convergence target (validation "
            f"`{abl.tasks[task].target.describe()}`) on {reached} of its {planned} planned seeds within the step "
            f"budget: this scale is too small to learn the task, {why}.**",
            "",
        ]
    return out


def _setup_section(abl: Ablation, profile: str, records: list[Record]) -> list[str]:
    prof = abl.profiles[profile]
    lines = [
        "## Setup",
        "",
        f"- Grid: {', '.join(f'`{k}` ∈ {v}' for k, v in abl.axes.items())}; "
        f"baseline `{abl.baseline_label}`; seeds {prof.seeds} "
        f"({'confirmatory' if prof.confirmatory else 'pilot: no verdicts'}).",
    ]
    if prof.only_variants or prof.only_tasks:
        lines.append(
            f"- This profile runs {len(abl.variants())} grid point(s): "
            f"{', '.join(f'`{abl.label(v)}`' for v in abl.variants())}; task(s) {', '.join(f'`{t}`' for t in abl.tasks)}."
        )
    for task, entry in abl.tasks.items():
        recs = [r for r in records if r.task == task]
        if not recs:
            lines.append(f"- Task `{task}`: no runs in the store.")
            continue
        # the baseline's config: the axes vary around it (the grid line above names them)
        r = next((x for x in recs if x.variant_label == abl.baseline_label), recs[0])
        c = r.config
        m, t, e = c["model"], c["train"], c["eval"]
        lines.append(
            f"- Task `{task}` v{r.task_version} {r.task_params or ''} (baseline `{abl.baseline_label}`): d_model {m['d_model']}, {m['n_heads']} heads, "
            f"{m['n_layers']} layers, d_ff {FFNSection.model_validate(c['ffn']).width(m['d_model']) or 4 * m['d_model']}, "
            f"{c['block']['norm_position']}-"
            f"{c['block']['norm']}, {c['ffn']['activation']}, kernel {c['attention']['kernel']}; "
            f"{t['steps']} steps x batch {t['batch_size']} at L = {t['seq_len']} tokens, AdamW lr {t['lr']:g} "
            f"(warm-up {t['warmup_steps']}, {_decay(t['min_lr_ratio'])}), weight decay {t['weight_decay']:g}, "
            f"precision {r.get('precision', t['precision'])}; evaluated on {e['n_examples']} held-out examples at "
            f"{', '.join(str(x * t['seq_len']) for x in e['length_multipliers'])} tokens; primary "
            f"`{entry.primary.metric}`"
            + (f"; gate `{entry.gate.describe()}`" if entry.gate else "")
            + (f"; convergence target validation `{entry.target.describe()}`" if entry.target else "")
            + "."
        )
    ok = [r for r in records if r.status == "ok"]
    if records:
        r = records[0]
        commits = sorted({str(x.commit) for x in records})
        total = sum(x.wall_time_s or 0 for x in records)
        lines += [
            f"- Hardware: {r.platform}, {r.cpu_count} CPUs, device {r.get('device', 'cpu')}"
            f"{', ' + r.cuda if r.cuda else ''}, {r.torch_threads} torch thread(s) per run.",
            f"- Versions: {', '.join(f'{k} {v}' for k, v in (r.versions or {}).items())}.",
            f"- Commit(s): {', '.join(commits)}.",
            *_plugins_line(records),
            f"- Runs: {len(records)} in the store ({len(ok)} ok); summed run wall time {total / 60:.1f} min.",
        ]
    return lines + [""]


def _plugins_line(records: list[dict[str, Any]]) -> list[str]:
    """``- Plugins: my-plugin 0.1.0 (position:xpos, task:lag_copy).``: every plugin the runs were made
    with (a record's ``plugins``, :mod:`harness.experiment.plugins`); none when no run had one."""
    seen: dict[str, list[str]] = {}
    for rec in records:
        for p in rec.get("plugins") or []:
            name = f"{p.get('distribution') or p.get('path') or p.get('module')} " + (
                str(p.get("version")) if p.get("version") else f"(sha256 {str(p.get('sha256'))[:12]})"
            )
            seen.setdefault(name, list(p.get("entries") or []))
    if not seen:
        return []
    return ["- Plugins: " + "; ".join(f"{n} ({', '.join(e) or 'no entries'})" for n, e in seen.items()) + "."]


def _decay(min_ratio: float) -> str:
    return "then constant" if min_ratio == 1 else f"cosine to {min_ratio:g} x"


def _results_section(abl: Ablation, profile: str, result: Analysis, fig_dir: Path, md_dir: Path) -> list[str]:
    lines = [
        "## Results",
        "",
        "Each variant against the baseline, paired by seed (paired t-test and its t-interval; "
        "exact sign-flip permutation test as a check). Δ is oriented so that positive means better. "
        "`p adj`: Holm over the primary comparisons of all tasks; Benjamini-Hochberg within "
        "each exploratory metric; the sign-flip p and the equivalence (TOST) p are adjusted in the same "
        "family. `better` / `worse` need both the t-test and the exact sign-flip test to reject after "
        "adjustment (with fewer than 6 seeds that differ, or 8 in a family of 6, the exact test cannot). "
        "The 95% CIs are per comparison, not adjusted for multiplicity; the verdict reads the adjusted p. "
        "MDE: the smallest Δ this design detects with 80 % power at alpha / the family size (the "
        "family's first Holm step). `–`: undefined (e.g. fewer than 2 pairs; the verdict says why). "
        "Runs below a task's gate are left out of comparisons beyond L (`excluded`).",
        "",
    ]
    stem = f"{abl.name}" + ("" if profile == abl.default_profile else f".{profile}")
    for task, entry in abl.tasks.items():
        lines += [f"### Task `{task}`", ""]
        tables = [t for t in result.tables if t.task == task]
        if not tables:
            lines += ["No finished runs.", ""]
            continue
        rows = _gated_rows(result, task)
        base = entry.primary.metric.split("@")[0]
        variants = [abl.label(v) for v in abl.variants()]
        train_len = _train_len(result, task)
        if (
            rows["metric"].str.match(rf"^{base}@x\d+$").any()
            and rows.loc[rows["metric"].str.startswith(f"{base}@x"), "metric"].nunique() > 1
        ):  # a length ablation
            fig = figures.metric_vs_length(
                rows,
                base,
                variants,
                train_len,
                f"{task}: {base} against evaluation length",
                fig_dir / f"{stem}-{task}-{base}-vs-length.png",
            )
            lines += [f"![{task}: {base} against length]({fig.relative_to(md_dir).as_posix()})", ""]
        claimed = claimed_metrics(abl, task)
        for table in _report_tables(tables, base, claimed):
            lines += [f"**{title(table)}**", "", markdown(table), ""]
        lines += across_variants(result.table(task, entry.primary.metric), rows, fig_dir, md_dir, stem)
        others = sorted({t.metric for t in tables} - {t.metric for t in _report_tables(tables, base, claimed)})
        if others:
            lines += [
                f"Other metrics ({', '.join(f'`{m}`' for m in others)}): "
                f"`ablate compare {abl.name} --profile {profile} --metric NAME`.",
                "",
            ]
        hist = _history(result, task)
        if not hist.empty:
            metric = "acc" if "acc" in hist else "loss"
            fig = figures.validation_curves(
                hist,
                metric,
                variants,
                f"{task}: validation {metric} at L during training",
                fig_dir / f"{stem}-{task}-validation-{metric}.png",
            )
            lines += [f"![{task}: validation curves]({fig.relative_to(md_dir).as_posix()})", ""]
    return lines


def _report_tables(tables: list, base: str, claimed: set[str] | frozenset[str] = frozenset()) -> list:
    """The primary metric at every length, the convergence metric, then any other metric a claim's
    evidence names (e.g. ``finished``, ``grad_norm_cv``, ``train_tokens_per_s``); the rest stays in
    ``ablate compare`` so that the report is not drowned in exploratory tables."""
    keep = [t for t in tables if t.metric.split("@")[0] == base]
    keep += [t for t in tables if t.metric == metrics.STEPS_TO_TARGET]
    return keep + [t for t in tables if t.metric in claimed and t not in keep]


def _train_len(result: Analysis, task: str) -> int:
    return next(r.config["train"]["seq_len"] for r in result.scan.records if r.task == task)


def _gated_rows(result: Analysis, task: str) -> pd.DataFrame:
    runs = result.runs[result.runs["task"] == task]
    if not result.ablation.profiles[result.profile].apply_gate:
        return result.rows[result.rows["task"] == task]
    gated = set(runs.loc[(runs["status"] == "ok") & ~runs["passed_gate"], "run_id"])
    rows = result.rows[result.rows["task"] == task]
    drop = rows["run_id"].isin(gated) & rows["metric"].map(beyond_training)
    return rows[~drop]


def _history(result: Analysis, task: str) -> pd.DataFrame:
    frames = []
    for rec in result.scan.records:
        if rec.task != task or rec.status != "ok":
            continue
        frame = run_history(result.scan, result.results, rec)
        if isinstance(frame, str):  # a damaged curve: reported, never fatal
            result.scan.problems.append(frame)
        elif frame is not None:
            frames.append(frame.assign(variant=rec.variant_label, seed=rec.seed))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _failures_section(result: Analysis) -> list[str]:
    runs = result.runs
    bad = runs[(runs["status"] != "ok") | ~runs["passed_gate"]]
    lines = ["## Failures, divergences and runs below the gate", ""]
    if bad.empty and not result.scan.problems:
        return lines + ["None: every run finished and passed its task's gate.", ""]
    for _, r in bad.sort_values(["task", "variant", "seed"]).iterrows():
        why = r["reason"] if r["status"] != "ok" else _gate_reason(result, r)
        status = r["status"] if r["status"] != "ok" else "below gate"
        lines.append(f"- `{r['task']}` {r['variant']} seed {r['seed']}: **{status}** — {why}")
    lines += [f"- unreadable store entry: `{p}`" for p in result.scan.problems]
    return lines + [""]


def _gate_reason(result: Analysis, run: pd.Series) -> str:
    gate = result.ablation.tasks[run["task"]].gate
    rec = next(x for x in result.scan.records if x.run_id == run["run_id"])
    if not result.ablation.profiles[result.profile].apply_gate:
        return (
            f"`{gate.metric}` = {_metric_text(rec, gate.metric)}, below the gate "
            f"{gate.describe()}; the gate is not applied in this profile, so the run stays in every comparison"
        )
    return (
        f"did not learn the task at L: `{gate.metric}` = {_metric_text(rec, gate.metric)}, gate {gate.describe()}; "
        "left out of the comparisons beyond L"
    )


def _metric_text(rec: Record, metric: str) -> str:
    """A record's metric for prose: the value, or ``–`` and why there is none."""
    value = rec.metric(metric)
    if value is None:
        return "– (not recorded)"
    return text(value) + (" (undefined: NaN)" if math.isnan(value) else "")


def _commands(abl: Ablation, profile: str, overrides: list[str]) -> list[str]:
    prof = "" if profile == abl.default_profile else f" --profile {profile}"
    extra = "".join(f" {o}" for o in overrides)
    return ["pip install -e .", f"ablate run {abl.name}{prof}{extra}", f"ablate report {abl.name}{prof}{extra}"]
