"""Every claim's evidence names a registered ablation, one of its tasks and a non-baseline variant."""

import pytest

from harness.experiment.ablation import available, load
from harness.experiment.claims import load_claims

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
