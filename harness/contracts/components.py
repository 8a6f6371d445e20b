"""The contracts of a component (each in one line: docs/extending.md, "Check it"), checked in a small model.

The model (:data:`HOST`, training length L) has the defaults as its other components; :func:`check`, the entry point
of ``ablate check`` and the tests, checks a component or a task by name.
"""

from __future__ import annotations

import contextlib
import dataclasses
import statistics
import time
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from harness.contracts import shapes
from harness.contracts.causal import MODES, causality, prefix, tokens
from harness.contracts.result import CheckReport, ContractFailed, Passed, Refused, run_contract, skipped
from harness.contracts.targets import CheckTarget, resolve
from harness.contracts.tasks import check_task
from harness.dtypes import DTYPE_NAMES
from harness.modules import KERNELS, POSITIONAL, ComponentFamily, TransformerConfig, TransformerLM

V, L, BATCH = 16, 16, 4
HOST = {"vocab_size": V, "d_model": 32, "n_heads": 4, "n_layers": 2, "max_len": L}
# Every multiplier of L and the longest evaluation (in tokens: pe_extrapolation's gpu profile on
# tinyshakespeare, 8 x 256) of a registered ablation (tests/contracts/test_components.py checks it)
MULTIPLIERS = (1, 2, 4, 8)
LONGEST = 2048
RUN_BATCH = 32  # the default train.batch_size: rows that differ show a component mixing the rows of a batch
DTYPES = {short: getattr(torch, name) for short, name in DTYPE_NAMES.items()}  # fp32, bf16, fp16
CONTRACTS = ("config", "shapes", "causality", "causality in use", "prefix", "determinism")
CONTRACTS += (*(f"finite {d}" for d in DTYPES), "lengths", "gradients", "parameters", "time and memory")
LENGTHS = (64, 256, 1024)  # of time and memory
REPEATS = 3
BUDGET_MS = 500.0  # a math kernel at T = 1024 takes about 0.8 s a call on two loaded cores


def host_config(family: ComponentFamily, name: str) -> TransformerConfig:
    """The config of the small model with ``family`` set to ``name``.

    Raises:
        ValueError: (or ``UnknownNameError``) when the config refuses it.
    """
    return TransformerConfig(**{**HOST, **dict(family.host), family.key: name})


def build(cfg: TransformerConfig, seed: int) -> TransformerLM:
    """The model of ``cfg`` initialised from ``seed``, in eval mode."""
    torch.manual_seed(seed)
    return TransformerLM(cfg).eval()


def check(
    target: CheckTarget | str, seed: int = 0, lengths: tuple[int, ...] | None = LENGTHS, data_dir: Path | None = None
) -> CheckReport:
    """Every contract of ``target`` (or the name ``ablate check`` takes), with the weights, tokens and data of ``seed``.

    Args:
        target: what to check, or the name ``ablate check`` takes.
        seed: the seed of the weights, tokens and data.
        lengths: the lengths of a component's ``time and memory`` (None leaves it out).
        data_dir: where a file-backed task looks for its data first.

    Raises:
        AblateError: a name that names nothing (:func:`harness.contracts.targets.resolve`).
    """
    target = resolve(target) if isinstance(target, str) else target
    family, name = target.family, target.name
    if family is None:
        return check_task(name, seed, data_dir)
    version, label = str(family.registry.version(name)), target.label
    first = run_contract("config", _config, family, name)
    if first.status != "pass":
        rest = skipped(CONTRACTS[1:] if lengths else CONTRACTS[1:-1], "the model could not be built")
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
        results.append(run_contract("time and memory", time_and_memory, cfg, default, family.default, lengths, seed))
    return CheckReport(label, "component", version, tuple(results))


def _config(family: ComponentFamily, name: str) -> Passed:
    cfg = host_config(family, name)
    build(cfg, 0)
    host = "".join(f", {k} {v}" for k, v in family.host)
    return f"accepted in a {cfg.n_layers}-layer model, d_model {cfg.d_model}, {cfg.n_heads} heads, L {L}{host}"


def shapes_contract(family: ComponentFamily, name: str, cfg: TransformerConfig, seed: int) -> Passed:
    """The ``shapes`` contract: the family's own check (:mod:`.shapes`), then the host model's logits (B, T, V) float32.

    Raises:
        ContractFailed: naming what came out with the wrong shape or dtype.
    """
    detail = getattr(shapes, family.key)(name, cfg)  # shapes has one function per family key
    logits = build(cfg, seed)(tokens(BATCH, L, seed, V))
    shapes.expect("logits", logits, (BATCH, L, V), torch.float32)
    return f"{detail}; logits (B, T, V) float32"


def determinism(cfg: TransformerConfig, seed: int) -> Passed:
    """The ``determinism`` contract: two builds from ``seed`` have identical weights and logits; two calls agree.

    Raises:
        ContractFailed: naming the weights that differ (up to 5), or the largest change of the logits.
    """
    idx = tokens(BATCH, L, seed, V)
    a, b = build(cfg, seed), build(cfg, seed)
    sa, sb = a.state_dict(), b.state_dict()
    if differ := [k for k in sa if not torch.equal(sa[k], sb[k])]:
        raise ContractFailed(f"seed {seed} gives other weights on a second build: {', '.join(differ[:5])}")
    with torch.no_grad():
        la, lb, again = a(idx), b(idx), a(idx)
    if not torch.equal(la, lb):
        raise ContractFailed(f"seed {seed}: two builds give other logits (|change| {(la - lb).abs().max():.3g})")
    if not torch.equal(la, again):
        raise ContractFailed(f"two calls on the same input give other logits (|change| {(la - again).abs().max():.3g})")
    return f"seed {seed}: identical weights ({len(sa)} tensors) and logits on a second build; two calls agree"


def finite(cfg: TransformerConfig, dtype_name: str, seed: int) -> Passed:
    """The ``finite`` contract at ``dtype_name`` (:data:`DTYPES`): a training step gives finite logits and gradients.

    The forward runs under CPU autocast to that dtype (none for fp32), in training mode; the loss is computed on the
    logits in float32.

    Raises:
        Refused: the kernel refuses the dtype on CPU before any run, or torch has no CPU autocast to it.
        ContractFailed: the logits (first position named) or gradients (parameters named) are not finite.
    """
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
    autocast = torch.autocast("cpu", dtype=dtype) if dtype != torch.float32 else contextlib.nullcontext()
    with autocast:
        if dtype != torch.float32 and not torch.is_autocast_enabled("cpu"):
            raise Refused(f"torch {torch.__version__} has no CPU autocast to {dtype}")
        logits, loss = _step(model, seed)
    _finite(logits, f"logits not finite under {dtype_name}")
    loss.backward()
    if bad := [n for n, p in model.named_parameters() if p.grad is not None and not torch.isfinite(p.grad).all()]:
        raise ContractFailed(f"gradients not finite under {dtype_name}: {', '.join(bad[:5])}")
    return f"logits {str(logits.dtype).removeprefix('torch.')}, loss {loss.item():.3f}, every gradient finite"


def _step(model: TransformerLM, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The logits (B, T, V) of a batch of ``seed``'s tokens and their loss (in float32) on ``seed + 1``'s."""
    logits = model(tokens(BATCH, L, seed, V))  # (B, T, V)
    return logits, F.cross_entropy(logits.float().flatten(0, 1), tokens(BATCH, L, seed + 1, V).flatten())


def _finite(logits: torch.Tensor, what: str) -> None:
    """:class:`ContractFailed` (``what`` and the first position) unless ``logits`` (B, T, V) are finite."""
    if not torch.isfinite(logits).all():
        raise ContractFailed(f"{what} (first at position {int((~torch.isfinite(logits)).any(-1).any(0).nonzero()[0])})")


def covering(cfg: TransformerConfig, longest: int) -> TransformerConfig:
    """``cfg`` with ``max_len`` covering ``longest`` tokens, as a run's model is sized (the longest evaluation).

    Raises:
        Refused: when the encoding still declares fewer positions.
    """
    cfg = dataclasses.replace(cfg, max_len=max(cfg.max_len or 0, longest))
    limit = POSITIONAL.get(cfg.position).max_positions(cfg)
    if limit is not None and limit < longest:
        raise Refused(
            f"position '{cfg.position}' declares max_positions {limit} < {longest} tokens: "
            "the harness refuses such an evaluation before any run"
        )
    return cfg


def causality_in_use(cfg: TransformerConfig, seed: int) -> Passed:
    """The ``causality in use`` contract: causality at each length L x :data:`MULTIPLIERS`, in each of :data:`MODES`.

    At each length up to :data:`RUN_BATCH` start positions, one batch row each, spread from 1 to T-1; the model is
    sized for the longest length (:func:`covering`).

    Raises:
        ContractFailed: naming the length and mode where an output sees a later token.
        Refused: the encoding declares fewer positions than the longest length.
    """
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
    """The ``lengths`` contract: finite (1, T, V) float32 logits at each L x :data:`MULTIPLIERS` and at :data:`LONGEST`.

    Under ``torch.inference_mode``, the model sized for :data:`LONGEST` (:func:`covering`).

    Raises:
        ContractFailed: naming the length whose logits have the wrong shape or dtype, or are not finite.
        Refused: the encoding declares fewer than :data:`LONGEST` positions.
    """
    lengths = sorted({*(m * L for m in MULTIPLIERS), LONGEST})
    model = build(covering(cfg, LONGEST), seed)
    for t in lengths:
        with torch.inference_mode():
            logits = model(tokens(1, t, seed, V))  # (1, T, V)
        shapes.expect(f"logits at T={t}", logits, (1, t, V), torch.float32)
        _finite(logits, f"logits at T={t} not finite")
    return f"finite logits at T = {', '.join(map(str, lengths))}"


def gradients(cfg: TransformerConfig, seed: int) -> Passed:
    """The ``gradients`` contract: one backward pass gives every parameter tensor a finite, non-zero gradient.

    Raises:
        ContractFailed: naming the parameters with no, a zero or a non-finite gradient (up to 5 of each).
    """
    model = build(cfg, seed).train()
    _step(model, seed)[1].backward()
    named = list(model.named_parameters())
    problems = {
        "no gradient": [n for n, p in named if p.grad is None],
        "a zero gradient": [n for n, p in named if p.grad is not None and not p.grad.any()],
        "a non-finite gradient": [n for n, p in named if p.grad is not None and not torch.isfinite(p.grad).all()],
    }
    if found := "; ".join(f"{len(ns)} get {what}: {', '.join(ns[:5])}" for what, ns in problems.items() if ns):
        raise ContractFailed(found)
    return f"all {len(named)} parameter tensors get a finite, non-zero gradient"


def parameters(cfg: TransformerConfig, default: TransformerConfig, default_name: str, seed: int) -> Passed:
    """The ``parameters`` contract: the state_dict holds everything the outputs depend on.

    A model initialised from ``seed + 1`` and loaded with the state_dict of one from ``seed`` gives the same logits.
    The detail and data also give the parameter count, and its difference from the family's default
    (``default_name``, whose config is ``default``).

    Raises:
        ContractFailed: the loaded model gives other logits: a resumed run would differ.
    """
    model = build(cfg, seed)
    n, n_default = model.num_parameters(), build(default, seed).num_parameters()
    other = build(cfg, seed + 1)
    other.load_state_dict(model.state_dict())
    idx = tokens(BATCH, L, seed, V)
    with torch.no_grad():
        gap = (model(idx) - other(idx)).abs().max().item()
    if gap != 0:
        raise ContractFailed(
            f"a model loaded from the state_dict (over seed {seed + 1}'s init) gives other logits (|change| "
            f"{gap:.3g}): "
            "a tensor the outputs depend on is outside the checkpoint, so a resumed run would differ"
        )
    return (
        f"{n:,} parameters ({n - n_default:+,} vs {default_name}); the state_dict holds everything",
        {"n_params": n, "default_n_params": n_default},
    )


def model_cost(model: TransformerLM, seq_len: int, seed: int = 0) -> dict[str, Any]:
    """Forward + backward of ``model`` on a (1, ``seq_len``) batch: a row of ``time and memory``.

    ``ms`` the median over ``calls`` timed calls after an untimed one (up to :data:`REPEATS`, fewer once they took
    :data:`BUDGET_MS`), ``mib_saved`` saved for backward (unique storages but the parameters); ``refused``: why the
    model declares it cannot run at this length (then no numbers).
    """
    row: dict[str, Any] = {"seq_len": seq_len, "ms": None, "calls": 0, "mib_saved": None, "refused": None}
    limit = POSITIONAL.get(model.cfg.position).max_positions(model.cfg)
    if limit is not None and limit < seq_len:
        return row | {"refused": f"max_positions {limit}"}
    idx = tokens(1, seq_len, seed, model.cfg.vocab_size)  # (1, T)
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    saved: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in params:
            saved[storage.data_ptr()] = storage.nbytes()
        return t

    def step(hooks: Any = None) -> None:
        with hooks or contextlib.nullcontext():
            logits = model(idx)  # (1, T, V)
        F.cross_entropy(logits.float().flatten(0, 1), idx.flatten()).backward()
        model.zero_grad(set_to_none=True)

    step(torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t))
    times: list[float] = []
    while len(times) < REPEATS and sum(times) < BUDGET_MS:
        start = time.perf_counter()
        step()
        times.append((time.perf_counter() - start) * 1e3)
    return row | {"ms": statistics.median(times), "calls": len(times), "mib_saved": sum(saved.values()) / 2**20}


def _text(c: dict[str, Any]) -> str:
    return f"refused ({c['refused']})" if c["refused"] else f"{c['ms']:.3g} ms {c['mib_saved']:.3g} MiB"


def time_and_memory(
    cfg: TransformerConfig, default: TransformerConfig | None, default_name: str, lengths: tuple[int, ...], seed: int
) -> Passed:
    """:func:`model_cost` at every length for ``cfg`` and (unless None) ``default``, side by side.

    Each model is built once with ``max_len`` covering the longest length (a learned table must hold it). Memory
    counted from ``saved_tensors_hooks`` is exact on any device, unlike a process's peak RSS, and what grows with T (a
    ``math`` kernel saves its (B, H, T, T) weights, a fused kernel does not); it misses buffers freed within the
    forward.
    """
    costs = []
    for c in (cfg, default) if default else (cfg,):
        sized = c if c.max_len is None else dataclasses.replace(c, max_len=max(c.max_len, *lengths))
        model = build(sized, seed).train()
        costs.append([model_cost(model, t, seed) for t in lengths])
    parts, rows = [], []
    for c, d in zip(costs[0], costs[1] if default else [None] * len(lengths), strict=True):
        parts.append(f"T={c['seq_len']} {_text(c)}" + (f" ({default_name} {_text(d)})" if d else ""))
        rows.append(c | ({"default_ms": d["ms"], "default_mib_saved": d["mib_saved"]} if d else {}))
    tail = "" if default else " (this is the default)"
    detail = "forward + backward, MiB saved for backward: " + "; ".join(parts) + tail
    return detail, {"threads": torch.get_num_threads(), "rows": rows}
