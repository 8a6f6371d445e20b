"""Every claim's evidence names a registered ablation, one of its tasks and a non-baseline variant."""

import pytest

from harness.errors import AblateError
from harness.experiment.ablation import available, load
from harness.experiment.claims import load_claims, parse_claims

CLAIMS = load_claims()
WITH_EVIDENCE = [c for c in CLAIMS.values() if c.get("evidence")]


@pytest.mark.parametrize("claim", WITH_EVIDENCE, ids=[c["id"] for c in WITH_EVIDENCE])
def test_evidence_points_into_the_grid(claim):
    assert claim["ablation"] in available()
    abl = load(claim["ablation"])
    assert claim["id"] in abl.claims
    labels = {abl.label(v) for v in abl.variants()} - {abl.baseline_label}
    for ev in claim["evidence"]:
        assert ev["task"] in abl.tasks, ev
        assert ev["variant"] in labels, (ev["variant"], sorted(labels))
        assert ev["expect"] in ("better", "worse", "equivalent")


@pytest.mark.parametrize("name", sorted(available()))
def test_every_claim_of_an_ablation_is_registered(name):
    abl = load(name)
    for cid in abl.claims:
        assert cid in CLAIMS and CLAIMS[cid]["ablation"] == name


GOOD = {
    "id": "x",
    "claim": "X helps.",
    "figure": "none",
    "ablation": "pe_extrapolation",
    "evidence": [{"task": "copy", "metric": "acc@x4", "variant": "rope", "expect": "better"}],
}


def test_the_file_parses_to_the_dicts_its_readers_use():
    assert parse_claims([GOOD]) == {"x": GOOD}  # no keys added for fields the entry leaves out


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
