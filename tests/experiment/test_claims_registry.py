"""Every claim's evidence names a registered ablation, one of its tasks and a non-baseline variant;
every claim quotes its write-up, and the audit page is what the claims give."""

import pytest

from harness.errors import AblateError
from harness.experiment.ablation import available, load
from harness.experiment.claims import Claim, load_claims, load_registry, parse_claims
from harness.report import claims_audit

CLAIMS = load_claims()
WITH_EVIDENCE = [c for c in CLAIMS.values() if c.evidence]


@pytest.mark.parametrize("claim", WITH_EVIDENCE, ids=[c.id for c in WITH_EVIDENCE])
def test_evidence_points_into_the_grid(claim):
    assert claim.ablation in available()
    abl = load(claim.ablation)
    assert claim.id in abl.claims
    labels = {abl.label(v) for v in abl.variants()}
    for ev in claim.evidence:
        assert ev.task in abl.tasks, ev
        if ev.profile is not None:  # a setting only one profile runs: its grid holds the comparison
            assert ev.profile in abl.profiles, ev
            view = abl.for_profile(ev.profile)
            assert ev.task in view.tasks and ev.variant in {view.label(v) for v in view.variants()}, ev
        assert ev.variant in labels - {abl.baseline_label}, (ev.variant, sorted(labels))
        assert (ev.against or abl.baseline_label) in labels - {ev.variant}, ev
        assert ev.expect in ("better", "worse", "equivalent") or ev.premise, ev


@pytest.mark.parametrize("claim", list(CLAIMS.values()), ids=list(CLAIMS))
def test_every_claim_has_its_evidence_audit(claim):
    """Each part of the wording is tested by a comparison of the claim's ablation, or says why not;
    each comparison tests a part (docs/claims-audit.md)."""
    parts = claim.parts
    assert parts and any(p.kind == "effect" for p in parts), claim.id
    words = {p.words for p in parts}
    for part in parts:
        tests = [ev for ev in claim.evidence if ev.part == part.words]
        assert bool(tests) != bool(part.not_tested), part
    assert all(ev.part in words for ev in claim.evidence), claim.id


def test_the_audit_page_holds_the_table_the_claims_give():
    page = claims_audit.PAGE.read_text()
    assert claims_audit.render(page) == page, (
        "run `python -m harness.report.claims_audit` and commit docs/claims-audit.md"
    )
    assert len([line for line in page.splitlines() if line.startswith("| `")]) == len(CLAIMS) + sum(
        len(c.parts) for c in CLAIMS.values()
    )
    sources = page.split(claims_audit.SOURCES_BEGIN)[1].split(claims_audit.SOURCES_END)[0]
    fidelity = {
        line.split(" | ")[0][3:-1]: line.split(" | ")[4] for line in sources.splitlines() if line.startswith("| `")
    }
    assert fidelity == {cid: c.fidelity() for cid, c in CLAIMS.items()}


@pytest.mark.parametrize("claim", list(CLAIMS.values()), ids=list(CLAIMS))
def test_every_claim_quotes_its_write_up_and_never_rules_on_something_else(claim):
    """Each claim names its write-up (a file of the write-ups' folder), quotes it in Chinese and
    translates it; its fidelity is never ``not`` (only stand-ins testing its effects): a claim whose
    evidence tests something else says ``not tested as stated``, and its verdict does too."""
    assert claim.sources, claim.id
    for src in claim.sources:
        assert any("\u4e00" <= ch <= "\u9fff" for ch in src.quote), (claim.id, src.quote)
        assert not any("\u4e00" <= ch <= "\u9fff" for ch in src.translation), claim.id  # translated
    assert claim.fidelity() != "not", claim.id
    if claim.fidelity() == "not tested as stated":
        untested = [p for p in claim.parts if p.kind != "condition"]
        assert all(p.not_tested for p in untested), claim.id
    for part in claim.parts:  # every untested part says why, in words a reader can check
        assert part.not_tested is None or len(part.not_tested) > 40, (claim.id, part.words)


def test_a_claim_that_tests_only_a_stand_in_reads_not():
    stand_in = {**GOOD, "parts": [{"words": "helps", "kind": "effect"}]}
    stand_in["evidence"] = [{**GOOD["evidence"][0], "part": "helps", "tests": "another task"}]
    (claim,) = parse_claims([stand_in]).values()
    assert claim.fidelity() == "not"
    direct = {**stand_in, "evidence": [{**GOOD["evidence"][0], "part": "helps"}]}
    assert next(iter(parse_claims([direct]).values())).fidelity() == "faithful"


def test_a_control_guards_exactly_the_claims_resting_on_what_it_tests():
    """A positive control withholds a claim only when it tests the mechanism the claim rests on
    (``mechanism``, ``rests_on``), and then every claim resting on it."""
    resting: dict[str, set[str]] = {}
    for cid, claim in CLAIMS.items():
        for mech in claim.rests_on:
            resting.setdefault(mech, set()).add(cid)
    tested = set()
    for entry in load_registry():
        if entry.mechanism is None:
            assert entry.guards == [], entry.id
            continue
        tested.add(entry.mechanism)
        assert set(entry.guards) == resting.get(entry.mechanism, set()), entry.id
    assert set(resting) <= tested  # a mechanism a claim rests on is tested by some control
    assert "layernorm-needed" not in {g for e in load_registry() for g in e.guards}


@pytest.mark.parametrize("name", sorted(available()))
def test_every_claim_of_an_ablation_is_registered(name):
    abl = load(name)
    for cid in abl.claims:
        assert cid in CLAIMS and CLAIMS[cid].ablation == name


GOOD = {
    "id": "x",
    "claim": "X helps.",
    "figure": "none",
    "ablation": "pe_extrapolation",
    "evidence": [{"task": "copy", "metric": "acc@x4", "variant": "rope", "expect": "better"}],
}


def test_the_file_parses_to_the_claims_its_readers_use():
    (claim,) = parse_claims([GOOD]).values()
    assert isinstance(claim, Claim) and claim.model_dump(exclude_unset=True) == GOOD
    assert claim.parts == [] and claim.evidence[0].against is None  # what the entry leaves out, defaulted


@pytest.mark.parametrize(
    ("bad", "words"),
    [
        ({"evidence": [{**GOOD["evidence"][0], "tsk": "copy"}]}, ["claim x", "evidence.0.tsk", "unknown key"]),
        ({"evidence": [{**GOOD["evidence"][0], "expect": "faster"}]}, ["claim x", "evidence.0.expect", "'faster'"]),
        ({"figure": None}, ["claim x", "figure"]),
        ({"ablaton": "pe"}, ["claim x", "ablaton", "did you mean 'ablation'"]),
    ],
)
def test_a_bad_entry_is_refused_with_its_id_and_key(bad, words):
    with pytest.raises(AblateError) as exc:
        parse_claims([{**GOOD, **bad}])
    for w in words:
        assert w in str(exc.value), (w, str(exc.value))


def test_a_repeated_id_or_a_file_that_is_not_a_list_is_refused():
    with pytest.raises(AblateError, match="appears twice"):
        parse_claims([GOOD, GOOD])
    with pytest.raises(AblateError, match="expected a list"):
        parse_claims({"x": GOOD})
