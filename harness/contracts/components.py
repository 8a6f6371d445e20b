"""The contracts of a component (each in one line: docs/extending.md, "Check it"), checked by
:func:`check_component` in a small model (:data:`HOST`, training length L) whose other components
are the defaults.
"""

from __future__ import annotations

import contextlib
import dataclasses

import torch
import torch.nn.functional as F

from harness.contracts import cost, shapes
from harness.contracts.causal import MODES, causality, prefix, tokens
from harness.contracts.result import CheckReport, ContractFailed, Passed, Refused, run_contract, skipped
from harness.contracts.targets import Family
from harness.modules import KERNELS, POSITIONAL, TransformerConfig, TransformerLM

V, L, BATCH = 16, 16, 4
HOST = {"vocab_size": V, "d_model": 32, "n_heads": 4, "n_layers": 2, "max_len": L}
# Every multiplier of L and the longest evaluation (in tokens: pe_extrapolation's gpu profile on
# tinyshakespeare, 8 x 256) of a registered ablation (tests/contracts/test_components.py checks it)
MULTIPLIERS = (1, 2, 4, 8)
LONGEST = 2048
RUN_BATCH = 32  # the default train.batch_size: rows that differ show a component mixing the rows of a batch
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
CONTRACTS = ("config", "shapes", "causality", "causality in use", "prefix", "determinism", "finite fp32", "finite bf16")
CONTRACTS += ("finite fp16", "lengths", "gradients", "parameters", "time and memory")


def host_config(family: Family, name: str) -> TransformerConfig:
    """The config of the small model with ``family`` set to ``name``; raises ``ValueError`` (or
    ``UnknownNameError``) when the config refuses it."""
    return TransformerConfig(**{**HOST, **dict(family.host), family.field: name})


def build(cfg: TransformerConfig, seed: int) -> TransformerLM:
    """The model of ``cfg`` initialised from ``seed``, in eval mode."""
    torch.manual_seed(seed)
    return TransformerLM(cfg).eval()


def check_component(
    family: Family, name: str, seed: int = 0, lengths: tuple[int, ...] | None = cost.LENGTHS
) -> CheckReport:
    """Every contract of component ``name`` (registered in ``family``), with the weights and tokens
    of ``seed``; ``lengths``: of ``time and memory``, None leaves that contract out."""
    version = str(family.registry.version(name))
    label = f"{family.key}={name}"
    first = run_contract("config", _config, family, name)
    if first.status != "pass":
        rest = [skipped(c, "the model could not be built") for c in CONTRACTS[1:] if lengths or c != CONTRACTS[-1]]
        return CheckReport(label, "component", version, (first, *rest))
    cfg = host_config(family, name)
    default = host_config(family, family.default) if family.registry.canonical(name) != family.default else None
    results = [
        first,
        run_contract("shapes", shapes_contract, family, name, cfg, seed),
        run_contract("causality", lambda: causality(build(cfg, seed), L, seed)),
        run_contract("causality in use", causality_in_use, cfg, seed),
        run_contract("prefix", lambda: prefix(build(cfg, seed), L, seed)),
        run_contract("determinism", determinism, cfg, seed),
        *(run_contract(f"finite {d}", finite, cfg, d, seed) for d in DTYPES),
        run_contract("lengths", lengths_contract, cfg, seed),
        run_contract("gradients", gradients, cfg, seed),
        run_contract("parameters", parameters, cfg, default or cfg, family.default, seed),
    ]
    if lengths:
        results.append(
            run_contract("time and memory", cost.time_and_memory, cfg, default, family.default, lengths, seed)
        )
    return CheckReport(label, "component", version, tuple(results))


def _config(family: Family, name: str) -> Passed:
    cfg = host_config(family, name)
    build(cfg, 0)
    host = "".join(f", {k} {v}" for k, v in family.host)
    return f"accepted in a {cfg.n_layers}-layer model, d_model {cfg.d_model}, {cfg.n_heads} heads, L {L}{host}"


def shapes_contract(family: Family, name: str, cfg: TransformerConfig, seed: int) -> Passed:
    detail = shapes.FAMILY_SHAPES[family.field](name, cfg)
    logits = build(cfg, seed)(tokens(BATCH, L, seed, V))
    shapes.expect("logits", logits, (BATCH, L, V), torch.float32)
    return f"{detail}; logits (B, T, V) float32"


def determinism(cfg: TransformerConfig, seed: int) -> Passed:
    idx = tokens(BATCH, L, seed, V)
    a, b = build(cfg, seed), build(cfg, seed)
    sa, sb = a.state_dict(), b.state_dict()
    differ = [k for k in sa if not torch.equal(sa[k], sb[k])]
    if differ:
        raise ContractFailed(f"seed {seed} gives other weights on a second build: {', '.join(differ[:5])}")
    with torch.no_grad():
        la, lb, again = a(idx), b(idx), a(idx)
    if not torch.equal(la, lb):
        raise ContractFailed(f"seed {seed}: two builds give other logits (|change| {(la - lb).abs().max():.3g})")
    if not torch.equal(la, again):
        raise ContractFailed(f"two calls on the same input give other logits (|change| {(la - again).abs().max():.3g})")
    return f"seed {seed}: identical weights ({len(sa)} tensors) and logits on a second build; two calls agree"


def finite(cfg: TransformerConfig, dtype_name: str, seed: int) -> Passed:
    dtype, position = DTYPES[dtype_name], POSITIONAL.get(cfg.position)
    try:  # the kernel's own refusal on CPU, as the pre-run checks ask it (grid.py)
        KERNELS.get(cfg.kernel).check_available(
            "cpu",
            dtype,
            with_mask=position.adds_bias(),
            dropout=cfg.dropout,
            mask_requires_grad=position.bias_requires_grad(cfg),
        )
    except ValueError as exc:
        raise Refused(f"kernel '{cfg.kernel}' refuses it before any run: {exc}") from None
    model = build(cfg, seed).train()
    idx, targets = tokens(BATCH, L, seed, V), tokens(BATCH, L, seed + 1, V)
    autocast = torch.autocast("cpu", dtype=dtype) if dtype != torch.float32 else contextlib.nullcontext()
    with autocast:
        if dtype != torch.float32 and not torch.is_autocast_enabled("cpu"):
            raise Refused(f"torch {torch.__version__} has no CPU autocast to {dtype}")
        logits = model(idx)  # (B, T, V)
        loss = F.cross_entropy(logits.float().flatten(0, 1), targets.flatten())
    if not torch.isfinite(logits).all():
        p = int((~torch.isfinite(logits)).any(-1).any(0).nonzero()[0])
        raise ContractFailed(f"logits not finite under {dtype_name} (first at position {p})")
    loss.backward()
    bad = [n for n, p in model.named_parameters() if p.grad is not None and not torch.isfinite(p.grad).all()]
    if bad:
        raise ContractFailed(f"gradients not finite under {dtype_name}: {', '.join(bad[:5])}")
    return f"logits {str(logits.dtype).removeprefix('torch.')}, loss {loss.item():.3f}, every gradient finite"


def covering(cfg: TransformerConfig, longest: int) -> TransformerConfig:
    """``cfg`` with ``max_len`` covering ``longest`` tokens, as a run's model is sized (the
    longest evaluation); :class:`Refused` when the encoding still declares fewer positions."""
    cfg = dataclasses.replace(cfg, max_len=max(cfg.max_len or 0, longest))
    limit = POSITIONAL.get(cfg.position).max_positions(cfg)
    if limit is not None and limit < longest:
        raise Refused(
            f"position '{cfg.position}' declares max_positions {limit} < {longest} tokens: "
            "the harness refuses such an evaluation before any run"
        )
    return cfg


def causality_in_use(cfg: TransformerConfig, seed: int) -> Passed:
    lengths = [m * L for m in MULTIPLIERS]
    model = build(covering(cfg, max(lengths)), seed)
    for t in lengths:
        starts = torch.linspace(1, t - 1, min(RUN_BATCH, t - 1)).round().long().unique()  # (B,)
        for mode in MODES:
            try:
                causality(model, t, seed, starts=starts, mode=mode)
            except ContractFailed as exc:
                raise ContractFailed(f"at T={t} ({t // L} x L) in {mode} mode: {exc}") from None
    return (
        f"no output up to t changes with the tokens after t at T = {', '.join(map(str, lengths))}, in "
        f"{' and '.join(MODES)} mode, {RUN_BATCH} rows a call"
    )


def lengths_contract(cfg: TransformerConfig, seed: int) -> Passed:
    lengths = sorted({*(m * L for m in MULTIPLIERS), LONGEST})
    model = build(covering(cfg, LONGEST), seed)
    for t in lengths:
        with torch.inference_mode():
            logits = model(tokens(1, t, seed, V))  # (1, T, V)
        shapes.expect(f"logits at T={t}", logits, (1, t, V), torch.float32)
        if not torch.isfinite(logits).all():
            p = int((~torch.isfinite(logits)).any(-1).any(0).nonzero()[0])
            raise ContractFailed(f"logits at T={t} not finite (first at position {p})")
    return f"finite logits at T = {', '.join(map(str, lengths))}"


def gradients(cfg: TransformerConfig, seed: int) -> Passed:
    model = build(cfg, seed).train()
    logits = model(tokens(BATCH, L, seed, V))
    F.cross_entropy(logits.flatten(0, 1), tokens(BATCH, L, seed + 1, V).flatten()).backward()
    named = list(model.named_parameters())
    problems = {
        "no gradient": [n for n, p in named if p.grad is None],
        "a zero gradient": [n for n, p in named if p.grad is not None and not p.grad.any()],
        "a non-finite gradient": [n for n, p in named if p.grad is not None and not torch.isfinite(p.grad).all()],
    }
    if any(problems.values()):
        raise ContractFailed(
            "; ".join(f"{len(ns)} get {what}: {', '.join(ns[:5])}" for what, ns in problems.items() if ns)
        )
    return f"all {len(named)} parameter tensors get a finite, non-zero gradient"


def parameters(cfg: TransformerConfig, default: TransformerConfig, default_name: str, seed: int) -> Passed:
    model = build(cfg, seed)
    n, n_default = model.num_parameters(), build(default, seed).num_parameters()
    other = build(cfg, seed + 1)
    other.load_state_dict(model.state_dict())
    idx = tokens(BATCH, L, seed, V)
    with torch.no_grad():
        gap = (model(idx) - other(idx)).abs().max().item()
    if gap != 0:
        raise ContractFailed(
            f"a model loaded from the state_dict (over seed {seed + 1}'s init) gives other logits (|change| {gap:.3g}): "
            "a tensor the outputs depend on is outside the checkpoint, so a resumed run would differ"
        )
    return (
        f"{n:,} parameters ({n - n_default:+,} vs {default_name}); the state_dict holds everything",
        {"n_params": n, "default_n_params": n_default},
    )
