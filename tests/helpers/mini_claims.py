"""The claims the fake store's ablation ``mini`` (:mod:`helpers.fake_store`) names, in the shape of
``harness/experiment/claims.yaml`` entries: learned worse, RoPE better, on copy's ``acc@x2``."""

MINI_CLAIMS = {
    "mini-learned-worse": {
        "id": "mini-learned-worse",
        "claim": "Learned positions fall behind.",
        "figure": "none",
        "evidence": [{"task": "copy", "metric": "acc@x2", "variant": "learned", "expect": "worse"}],
    },
    "mini-rope-better": {
        "id": "mini-rope-better",
        "claim": "RoPE does better.",
        "figure": "none",
        "evidence": [{"task": "copy", "metric": "acc@x2", "variant": "rope", "expect": "better"}],
    },
}
