"""The prose sections of a report, each markdown lines from the analysis.

They are the A/A check or the claims with their verdicts, the warnings (mixed code versions, a task not learned), the
setup, a group-sequential design.
"""

from __future__ import annotations

import math

from harness.analysis import declared, looks, untestable
from harness.analysis import paired as pw
from harness.analysis import sequential as sq
from harness.analysis import verdicts as vd
from harness.analysis.claims import NegativeComparison, audit_text, claim_verdict, control_outcomes
from harness.analysis.comparisons import Analysis
from harness.analysis.power import TARGET_POWER
from harness.encode import count, text
from harness.errors import RunStatus
from harness.experiment import claims as claims_mod
from harness.experiment.ablation import Ablation
from harness.experiment.declaration import SPENDING_FUNCTIONS
from harness.experiment.versions import mix_warning
from harness.report.controls import Controls
from harness.report.tables import md_table
from harness.store.record import Record


def aa_section(result: Analysis) -> list[str]:
    """How many comparisons between identical arms were declared different (each a false positive)."""
    alpha, lines = 0.05, ["## A/A check: false positives", ""]
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
    return lines + [
        "",
        "Every such declaration is a false positive. The long-run rate is measured by a simulation of "
        "1,000 A/A tables in the test suite (`tests/analysis/test_stats.py::test_aa_false_positive_rate`).",
        "",
    ]


def verdict(cid: str, result: Analysis, controls: Controls) -> tuple[str, list[str]]:
    """The claim's verdict on ``result`` and its evidence lines.

    The verdict is withheld while a control in ``controls`` has not passed.
    """
    return claim_verdict(claims_mod.load_claims()[cid], result, controls.get(cid, ()))


def claims_section(abl: Ablation, result: Analysis, controls: Controls) -> list[str]:
    """Each claim the ablation tests, its verdict and evidence lines, and the scale caveat."""
    claims = claims_mod.load_claims()
    lines = ["## Claims", ""]
    if not abl.claims:
        uses = [r.id for r in claims_mod.load_registry() if any(c.ablation == abl.name for c in r.comparisons)]
        named = ", ".join(f"`{u}`" for u in uses)
        lines += [
            "This ablation tests no claim of `harness/experiment/claims.yaml`"
            + (f"; its runs are the evidence of {named} on [the reproductions page](reproductions.md)" if uses else "")
            + ": its results are findings, not verdicts on a claim.",
            "",
        ]
    for cid in abl.claims:
        claim = claims[cid]
        said, evidence = verdict(cid, result, controls)
        lines += [f"### `{cid}`: {said}", "", f"> {claim.claim} (figure given: {claim.figure})", ""]
        if audit := audit_text(claim):
            lines += [audit, ""]
        lines += [*(f"- {e}" for e in evidence), ""]
    if controls := control_outcomes(result):
        bug = f"{abl.control.variant or 'every variant'} is a known bug, expected {abl.control.expect}"
        lines += [f"Negative control ({bug}): {'; '.join(control_text(c) for c in controls)}.", ""]
    recs = result.scan.records  # each task's scale: its first run's config
    scale = {t: next(r.config for r in recs if r.task == t) for t in dict.fromkeys(r.task for r in recs)}
    desc = "; ".join(  # no run in the store: only the seed count below
        f"{t}: d_model {c.model.d_model}, {count(c.model.n_layers, 'layer')}, "
        f"{count(c.train.steps, 'step')}, L = {c.train.seq_len}"
        for t, c in scale.items()
    )
    lines += [
        f"Scale caveat: these {'verdicts' if abl.claims else 'results'} hold at the scale run here "
        f"({'; '.join(filter(None, (desc, result.seeds_text())))}), not necessarily "
        + ("at the scale where the claims were made." if abl.claims else "at another scale."),
        "",
    ]
    return lines + unlearned_warnings(abl, result)


def control_text(c: NegativeComparison) -> str:
    r"""``\`task\` variant: **caught** (\`metric\` worse, adjusted p 0.0078)``: the report's and the index's."""
    p = f", adjusted p {text(c.p_adj, '.3g')}" if c.p_adj == c.p_adj else ""
    return f"`{c.task}` {c.variant}: **{'caught' if c.caught else 'not caught'}** (`{c.metric}` {c.verdict}{p})"


def warning_lines(result: Analysis) -> list[str]:
    """The loud lines above a report's claims.

    One for every task whose compared runs were made by different code versions, then one when the profile's design
    changed after its runs existed, or is not recorded for some.
    """
    design = declared.check(result.selection, result.scan.records).warning(result.selection.settings.confirmatory)
    said = [*(mix_warning(task, mix) for task, mix in result.mixed_code.items()), design]
    return [f"**Warning: {w}.**\n" for w in said if w]


def unlearned_warnings(abl: Ablation, result: Analysis) -> list[str]:
    """A loud line for every task whose baseline did not learn it: why its tables read ``not learned``."""
    out = []
    confirmatory = abl.profiles[result.profile].confirmatory
    for task, unlearned in result.unlearned.items():
        reached, planned, run = unlearned
        target = f"the convergence target (validation `{abl.tasks[task].target.describe()}`)"
        none = f"no comparison on it gets a verdict: each reads `{vd.not_learned_target(*unlearned)}`"
        if run < planned and untestable.learned(reached + planned - run, planned):
            # an unfinished grid: the seeds not run yet could still make the task learned
            pilot = "it cannot say whether a confirmatory run at this scale would give a verdict"
            said = (
                f"has reached {target} on {reached} of the {run} seeds run so far ({planned} planned): whether "
                f"this scale learns the task is not known until its other {planned - run} run(s) finish, and until "
                f"then {none if confirmatory else pilot}"
            )
        else:
            said = (
                f"reached {target} on {reached} of its {planned} planned seeds within the step budget: this scale "
                "is too small to learn the task, "
                + (f"so {none}" if confirmatory else "and a confirmatory run at this scale would give no verdict on it")
            )
        out += [f"**Warning: on `{task}` the baseline {said}.**", ""]
    return out


def setup_section(abl: Ablation, profile: str, records: list[Record], result: Analysis | None = None) -> list[str]:
    """The grid, each task's (baseline's) config, hardware, versions, commits, run counts and power."""
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
            f"{', '.join(f'`{abl.label(v)}`' for v in abl.variants())}; task(s) "
            f"{', '.join(f'`{t}`' for t in abl.tasks)}."
        )
    for task, entry in abl.tasks.items():
        recs = [r for r in records if r.task == task]
        if not recs:
            lines.append(f"- Task `{task}`: no runs in the store.")
            continue
        # the baseline's config: the axes vary around it (the grid line above names them)
        r = next((x for x in recs if x.variant_label == abl.baseline_label), recs[0])
        c = r.config
        m, t, e = c.model, c.train, c.eval
        decay = "then constant" if t.min_lr_ratio == 1 else f"cosine to {t.min_lr_ratio:g} x"
        lines.append(
            f"- Task `{task}` v{r.task_version}{f' {r.task_params}' if r.task_params else ''} (baseline "
            f"`{abl.baseline_label}`): "
            f"d_model {m.d_model}, {count(m.n_heads, 'head')}, {count(m.n_layers, 'layer')}, "
            f"d_ff {c.ffn.width(m.d_model)}, {c.block.norm_position}-{c.block.norm}, "
            f"{c.ffn.activation}, kernel {c.attention.kernel}; "
            f"{count(t.steps, 'step')} x batch {t.batch_size} at L = {t.seq_len} tokens, AdamW lr {t.lr:g} "
            f"(warm-up {t.warmup_steps}, {decay}), weight decay {t.weight_decay:g}, "
            f"precision {r.precision or t.precision}; evaluated on {e.n_examples} held-out examples at "
            f"{', '.join(str(x * t.seq_len) for x in e.length_multipliers)} tokens; primary "
            f"`{entry.primary.metric}`"
            + (f"; gate `{entry.gate.describe()}`" if entry.gate else "")
            + (f"; convergence target validation `{entry.target.describe()}`" if entry.target else "")
            + "."
        )
    if records:
        r, total = records[0], sum(x.wall_time_s or 0 for x in records)
        lines += [
            f"- Hardware: {r.platform}, {r.cpu_count} CPUs, device {r.device or 'cpu'}"
            f"{', ' + r.cuda if r.cuda else ''}, {r.torch_threads} torch thread(s) per run.",
            f"- Versions: {', '.join(f'{k} {v}' for k, v in (r.versions or {}).items())}.",
            f"- Commit(s): {', '.join(sorted({str(x.commit) for x in records}))}.",
            *_plugins_line(records),
            f"- Runs: {len(records)} in the store ({sum(x.status == RunStatus.OK for x in records)} ok); "
            f"summed run wall time {total / 60:.1f} min.",
        ]
    if result is not None and prof.confirmatory:
        lines += power_lines(result)
    return lines + [""]


def power_lines(result: Analysis) -> list[str]:
    """Each primary comparison's power at its sesoi (:func:`harness.analysis.power.primary_power`)."""
    if not result.power:
        return []
    first = result.power[0]
    per_task: dict[tuple[str, str], list[str]] = {}
    for p in result.power:
        need = f" (needs {p.needed})" if p.underpowered else f" ({p.note})" if p.note else ""
        per_task.setdefault((p.task, p.metric), []).append(
            f"{p.variant} power {text(p.power, '.2f')} at Δ = {p.sesoi:g} with {p.n_pairs} seeds{need}"
        )
    body = "; ".join(f"`{task}` `{metric}`: {', '.join(parts)}" for (task, metric), parts in per_task.items())
    return [
        f"- Power at the smallest effect of interest (`ablate plan`'s computation on this profile's own runs: "
        "the SD of the paired differences, two-sided paired t-test at alpha "
        f"{first.alpha_each * first.family_size:g} / "
        f"{first.family_size} primary comparisons = {first.alpha_each:.4g}, target power {TARGET_POWER:g}, and at "
        f"least {pw.sign_flip_min_seeds(first.alpha_each)} seeds for the exact sign-flip test): {body}. An "
        "inconclusive comparison with fewer seeds than it needs reads `underpowered at this scale (needs N seeds)`."
    ]


def _plugins_line(records: list[Record]) -> list[str]:
    seen: dict[str, list[str]] = {}
    for rec in records:
        for p in rec.plugins or []:
            name = f"{p.get('distribution') or p.get('path') or p.get('module')} " + (
                str(p.get("version")) if p.get("version") else f"(sha256 {str(p.get('sha256'))[:12]})"
            )
            seen.setdefault(name, list(p.get("entries") or []))
    plugins = "; ".join(f"{n} ({', '.join(e) or 'no entries'})" for n, e in seen.items())
    return [f"- Plugins: {plugins}."] if seen else []


def _verdict(result: Analysis, c: looks.ComparisonState) -> str:
    """The verdict its primary table gives a comparison of the design ("" for none)."""
    table = result.table(c.task, result.ablation.tasks[c.task].primary.metric)
    return str(table.row(c.variant).get("verdict", "")) if table is not None else ""


def sequential_section(result: Analysis) -> list[str]:
    """The design that decides (docs/sequential.md) and each primary comparison's look, bound and deciding interval.

    A group-sequential profile's looks, or a confirmatory profile's one look at every seed (a fixed design); read
    from :class:`~harness.analysis.looks.State`; none for a pilot profile.
    """
    st = result.sequential
    if st is None:
        return []
    d = st.design
    name = SPENDING_FUNCTIONS[d.spending]
    base = result.ablation.baseline_label
    futility = f"non-binding futility below {sq.FUTILITY_POWER:.0%} conditional power at the sesoi"
    futility = futility if d.futility else "no futility stop"
    title, looks_text, holm, ci, stop = (
        (
            "## Fixed design",
            f"One look at {d.looks[0]} seeds (no `sequential:` block: all of alpha there)",
            "Holm over it",
            "CI (its bound",
            "",  # what an early stop does to an estimate: a fixed design has none
        )
        if st.fixed
        else (
            "## Group-sequential design",
            f"Looks at {', '.join(map(str, d.looks))} seeds; Lan-DeMets {name} alpha spending",
            "Holm carried across looks",
            "repeated CI (bounds",
            " An estimate at an early stop is biased away from zero (a comparison stops when its estimate happens "
            "to be large): read Δ at a stopping look as an upper bound of the effect's size.",
        )
    )
    lines = [
        title,
        "",
        f"{looks_text}, two-sided alpha "
        f"{d.alpha:g} over the primary family (every verdict kind: better, worse, equivalent), {holm} "
        f"(a comparison passes its level L on only when its interval excludes 0 and lies within "
        f"±sesoi); each decided by one interval of coverage 1 - L, the hull of the paired t's {ci} "
        f"by simulation of its null distribution, {sq.N_PATHS:,} paths) and the studentized bootstrap's "
        f"({pw.BOOTSTRAP_RESAMPLES:,} resamples); where the family's pooled skewness exceeds sqrt(pairs / "
        f"{round(sq.SKEW_LIMIT**-2)}) in size (or its differences are fewer than {sq.SKEW_MIN_VALUES}), the end of "
        f"each interval on the skew's side has its bound widened by the t's Edgeworth shift at skewness "
        f"{sq.SKEW_COVERED:g}; {futility}. "
        f"{st.summary().capitalize()}.",
        "",
    ]
    rows = []
    for c in st.comparisons:
        at = c.look if c.look >= 0 else st.reached - 1
        where = f"{at + 1} ({c.pairs} pairs)" if at >= 0 else "none yet"
        decision = looks.OUTCOME_WORDS[c.outcome] if c.outcome != sq.OPEN else st.waits_for(c)
        if (final := _verdict(result, c)) and final != looks.verdict(st, c):  # a rule before the design's holds
            decision += f"; verdict: {final}"
        rci = f"[{text(c.rci[0], '.4g')}, {text(c.rci[1], '.4g')}]"
        cover = text(1 - c.level, ".4g")
        skew = text(c.skewed, ".2f") if math.isfinite(c.skewed) else ""
        numbers = [text(c.level, ".3g"), cover, c.bound_text(), text(c.t, ".2f"), text(c.delta, ".4g"), rci]
        rows.append([c.task, f"{c.variant} vs {base}", decision, where, *numbers, skew])
    columns = ["task", "comparison", "decision", "look (seeds)", "level L", "coverage 1 - L", "bound on abs(t)", "t"]
    columns += ["Δ", "deciding interval", "held back by skew"]
    return [
        *lines,
        *md_table(columns, rows),
        "",
        "The deciding interval is the one that decided each verdict, whatever its kind: `better` / `worse` when it "
        "excludes 0, `equivalent` when it lies within ±sesoi; at the comparison's level L and look its coverage "
        + ("is 1 - L, " if st.fixed else "is 1 - L whatever the stopping rule did (J&T ch. 9), ")
        + "so every kind of error is a miss of this interval. "
        "\"Held back by skew\" gives the family's pooled skewness where the skew guard's margin held back a verdict "
        f"that the interval without it would give. Where a rule before the design's holds (a baseline that "
        f"did not learn, one at the ceiling, a negligible difference), the decision names the verdict it gives.{stop} "
        "The comparison tables below read every stored pair of each arm; their p adj are the paired t-test's and "
        "do not decide here.",
        "",
    ]
