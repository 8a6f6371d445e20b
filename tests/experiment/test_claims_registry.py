"""Every claim's evidence names a registered ablation, one of its tasks and a non-baseline variant."""

import pytest

from harness.errors import AblateError
from harness.experiment.ablation import available, load
from harness.experiment.claims import Claim, load_claims, parse_claims
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
    assert len([line for line in page.splitlines() if line.startswith("| `")]) == sum(
        len(c.parts) for c in CLAIMS.values()
    )


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
