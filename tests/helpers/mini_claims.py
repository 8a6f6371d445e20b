"""The claims the fake store's ablation ``mini`` (:mod:`helpers.fake_store`) names, validated as
``harness/experiment/claims.yaml``'s entries are: learned worse, RoPE better, on copy's ``acc@x2``."""

from harness.experiment.claims import Claim, parse_claims

MINI_CLAIMS = parse_claims(
    [
        {
            "id": "mini-learned-worse",
            "claim": "Learned positions fall behind.",
            "figure": "none",
            "ablation": "mini",
            "evidence": [{"task": "copy", "metric": "acc@x2", "variant": "learned", "expect": "worse"}],
        },
        {
            "id": "mini-rope-better",
            "claim": "RoPE does better.",
            "figure": "none",
            "ablation": "mini",
            "evidence": [{"task": "copy", "metric": "acc@x2", "variant": "rope", "expect": "better"}],
        },
    ]
)


def claim_of(**fields) -> Claim:
    """A claim of the test ablation ``mini`` with ``fields`` (``evidence``, ``parts``), validated as
    claims.yaml's entries are (an AblateError); its id, wording and figure filled in."""
    return parse_claims([{"id": "c", "claim": "c", "figure": "none", "ablation": "mini", **fields}])["c"]
