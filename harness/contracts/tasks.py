"""The contracts of a task (each in one line: docs/extending.md, "Check it"), checked by :func:`check_task`.

It checks them on its default parameters (or its ``example_params``, for a task whose defaults cannot be built, such
as ``text``) at L = :data:`L` (or the task's ``min_seq_len``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from harness.contracts.result import CheckReport, ContractFailed, Passed, run_contract, skipped
from harness.tasks import IGNORE_INDEX, SPLITS, TASKS, DataUnavailableError, Task, TaskParams, build_task

L, N = 32, 64
# A copied target removes all the errors of the most frequent answer (1.0); the registered tasks
# at most 0.13 (tinyshakespeare's bigram), the example plugin's lag_copy 0.02
READABLE = 0.9
# no 32-character window of tinyshakespeare's val or test split occurs in its train split (16: 680 of 55,755)
WINDOW = 32
_rng = np.random.default_rng
CONTRACTS = ("version", "data", "shapes", "vocabulary", "answers", "determinism", "splits", "lengths")


def check_task(
    name: str, seed: int = 0, data_dir: Path | None = None, params: Mapping[str, Any] | None = None
) -> CheckReport:
    """Every contract of task ``name`` built with ``params`` (default: its ``example_params``)."""
    cls, canonical = TASKS.get(name), TASKS.canonical(name)
    results = [run_contract("version", version, canonical, cls)]
    task: Task | None = None

    def build() -> Passed:
        nonlocal task
        try:
            task = build_task(name, params if params is not None else cls.example_params, data_dir=data_dir)
            task.check_available()
        except DataUnavailableError as exc:  # whole: its message says where to put the file
            raise ContractFailed(str(exc)) from None
        return f"available (vocab {task.vocab_size}, min_seq_len {task.min_seq_len})"

    results.append(run_contract("data", build))
    if task is None or results[-1].status != "pass":
        results += skipped(CONTRACTS[2:], "the task could not be built or its data is missing")
    else:
        length = max(L, task.min_seq_len)
        contracts = (shapes, vocabulary, answers, determinism, splits, lengths)
        results += [run_contract(c, fn, task, length, seed) for c, fn in zip(CONTRACTS[2:], contracts, strict=True)]
    version_ = task.version if task is not None else getattr(cls, "version", "")  # an instance may add data digests
    return CheckReport(f"task={canonical}", "task", str(version_), tuple(results))


def _batches(task: Task, length: int, seed: int):
    """(split, T, inputs, targets) for every split at L, 4 L (if the split holds it) and ``min_seq_len``."""
    for split in SPLITS:
        longest = task.max_seq_len(split)
        for t in sorted({n for n in (task.min_seq_len, length, 4 * length) if longest is None or n <= longest}):
            yield (split, t, *task.sample(N, t, _rng(seed), split))


def version(name: str, cls: type[Task]) -> Passed:
    """The ``version`` contract: the task class declares its registry name ``name``, a version, a kind and ``Params``.

    ``version`` a non-empty str, ``kind`` ``synthetic`` or ``lm``, ``Params`` a :class:`TaskParams` subclass that
    refuses unknown fields.

    Raises:
        ContractFailed: listing every declaration that is wrong.
    """
    own, ver, kind, params = (getattr(cls, a, None) for a in ("name", "version", "kind", "Params"))
    strict = (
        isinstance(params, type) and issubclass(params, TaskParams) and params.model_config.get("extra") == "forbid"
    )
    checks = (
        (own == name, f"name {own!r} is not its registry name {name!r}"),
        (isinstance(ver, str) and ver, f"version must be a non-empty str, got {ver!r}"),
        (kind in ("synthetic", "lm"), f"kind must be 'synthetic' or 'lm', got {kind!r}"),
        (strict, "Params must subclass tasks.TaskParams (unknown fields refused)"),
    )
    if problems := [why for ok, why in checks if not ok]:
        raise ContractFailed("; ".join(problems))
    detail = f"version {cls.version} ({cls.kind}), params {', '.join(params.model_fields) or 'none'}"
    return detail, {"version": cls.version}


def shapes(task: Task, length: int, seed: int) -> Passed:
    """The ``shapes`` contract: inputs and targets are (N, T) int64 in every split, at every length checked.

    The lengths: ``length``, 4 x ``length`` (if the split holds it) and the task's ``min_seq_len``.

    Raises:
        ContractFailed: naming the split, the length and the tensor with the wrong shape or dtype.
    """
    seen = []
    for split, t, inputs, targets in _batches(task, length, seed):
        for what, x in (("inputs", inputs), ("targets", targets)):
            if tuple(x.shape) != (N, t) or x.dtype != torch.long:
                raise ContractFailed(f"{split} at T={t}: {what} {tuple(x.shape)} {x.dtype}, expected ({N}, {t}) int64")
        seen.append(t)
    return f"(N, T) int64 inputs and targets in {', '.join(SPLITS)} at T = {', '.join(map(str, sorted(set(seen))))}"


def vocabulary(task: Task, length: int, seed: int) -> Passed:
    """The ``vocabulary`` contract: ``pad_id`` and every input and scored target lie in [0, ``vocab_size``).

    Checked in every split at every length :func:`shapes` checks.

    Raises:
        ContractFailed: naming the pad id, or the first token outside with its split and length.
    """
    v, pad = task.vocab_size, task.pad_id
    if pad is not None and not 0 <= pad < v:
        raise ContractFailed(f"pad_id {pad} outside [0, {v})")
    for split, t, inputs, targets in _batches(task, length, seed):
        scored = targets != IGNORE_INDEX
        for what, x in (("input", inputs), ("scored target", targets[scored])):
            if (out := (x < 0) | (x >= v)).any():
                raise ContractFailed(f"{split} at T={t}: {what} token {x[out][0].item()} outside [0, {v})")
    return f"every input and scored target in [0, {v}) in every split and length"


def answers(task: Task, length: int, seed: int) -> Passed:
    """The ``answers`` contract: every row scores an answer, and no answer can be read from the input.

    Every row has a scored position (an ``lm`` task scores every position); with ``answers_in_input`` each scored
    target but a row's last is the next input token, without it none is; no scored position holds the padding token;
    and at ``length`` no target is :func:`readable` from the input. In every split at every length :func:`shapes`
    checks.

    Raises:
        ContractFailed: naming the split, the length and the rule broken.
    """
    for split, t, inputs, targets in _batches(task, length, seed):
        scored = targets != IGNORE_INDEX  # (N, T)
        if not scored.any(1).all():
            row = int((~scored.any(1)).nonzero()[0])
            raise ContractFailed(f"{split} at T={t}: row {row} has no scored position (no answer inside the sequence)")
        if task.kind == "lm" and not scored.all():
            raise ContractFailed(f"{split} at T={t}: an lm task must score every position")
        last = t - 1 - scored.flip(1).int().argmax(1)  # (N,): each row's last scored position
        inner = scored.clone()
        inner[torch.arange(N), last] = False
        inner = inner[:, :-1]  # (N, T-1): scored positions whose next input is in the row
        same = targets[:, :-1][inner] == inputs[:, 1:][inner]
        if task.answers_in_input and not same.all():
            raise ContractFailed(f"{split} at T={t}: a scored target is not the next input token (answers_in_input)")
        if not task.answers_in_input and same.any():
            raise ContractFailed(
                f"{split} at T={t}: an answer appears as the next input token (answers_in_input False)"
            )
        if (pad := task.pad_id) is not None and (scored & (inputs == pad)).any():
            raise ContractFailed(
                f"{split} at T={t}: a scored position holds the padding token {pad} (hidden from attention)"
            )
        if t == length:
            readable(task, inputs, targets, f"{split} at T={t}")
    share = "every position" if task.kind == "lm" else "answers only"
    return (
        f"every row scores {share}; targets {'are' if task.answers_in_input else 'are never'} the next input "
        "and cannot be read from the input at their own or a later position"
    )


def readable(task: Task, inputs: torch.Tensor, targets: torch.Tensor, where: str) -> None:
    """No scored target at t can be read off the input token at t, nor, for a task that hides its answers, at t + k.

    Only such a task is checked at every t + k: ``answers_in_input`` feeds each answer as the next input by design.
    Empirical: the most frequent target of each input token at offset k, learnt on the even rows of ``inputs``,
    ``targets`` (N, T), predicts the odd rows' scored targets; readable when that removes at least :data:`READABLE` of
    the errors of the most frequent answer (of 32 predictions or more). The input token itself predicts too, at every
    scored position of every row (a row's only or last one included), where no lookup needs to have seen it first.

    Raises:
        ContractFailed: naming the offset and both shares right.
    """
    x, y = inputs.numpy(), targets.numpy()
    scored = y != IGNORE_INDEX  # (N, T)
    learn = (np.arange(len(y)) % 2 == 0)[:, None]  # (N, 1): even rows learn, odd rows are predicted
    common = np.bincount(y[scored & learn]).argmax() if (scored & learn).any() else -1
    for k in range(1 if task.answers_in_input else x.shape[1]):
        t_idx = np.nonzero(scored[:, : x.shape[1] - k])  # scored positions t whose t + k is in the row
        key, answer = x[t_idx[0], t_idx[1] + k], y[t_idx]
        train = learn[t_idx[0], 0]
        pairs, counts = np.unique(np.stack([key[train], answer[train]]), axis=1, return_counts=True)
        order = np.lexsort((-counts, pairs[0]))  # per key, its most frequent answer first
        first = np.unique(pairs[0, order], return_index=True)[1]
        lookup = dict(zip(pairs[0, order][first].tolist(), pairs[1, order][first].tolist()))
        seen = np.array([k_ in lookup for k_ in key[~train].tolist()], dtype=bool)
        tests = []  # (right or not, the most frequent answer or not, what predicted), per prediction
        if seen.sum() >= 32:
            hits = [lookup[k_] == a for k_, a in zip(key[~train][seen].tolist(), answer[~train][seen].tolist())]
            tests.append((np.array(hits), answer[~train][seen] == common, "a lookup from it gets {} of {} right"))
        # the token itself, at every scored position (a row's only or last one too): no key need be seen before
        tests.append((key == answer, answer == common, "it is the target at {} of {}"))
        for hits, frequent, how in tests:
            right, base = float(np.mean(hits)), float(np.mean(frequent))
            if len(hits) >= 32 and base < 1 and (right - base) / (1 - base) >= READABLE:
                at = "its own position" if k == 0 else f"position t + {k}"
                raise ContractFailed(
                    f"{where}: the scored target at t is readable from the input token at {at} ("
                    + how.format(f"{right:.0%}", f"{len(hits)} scored positions")
                    + f", the most frequent answer {base:.0%}): "
                    + ("the model sees its answer" if k == 0 else "the answer is in the input after it")
                )


def determinism(task: Task, length: int, seed: int) -> Passed:
    """The ``determinism`` contract: in every split the same seed draws the same data, and the next seed other data.

    Raises:
        ContractFailed: the same seed gave other data, or seeds ``seed`` and ``seed + 1`` the same (the task ignores
            its generator, or its parameters leave a single problem).
    """
    for split in SPLITS:
        a, b, c = (task.sample(N, length, _rng(s), split) for s in (seed, seed, seed + 1))
        if not (torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])):
            raise ContractFailed(f"{split}: the same generator seed gave other data")
        if torch.equal(a[0], c[0]) and torch.equal(a[1], c[1]):
            raise ContractFailed(
                f"{split}: seeds {seed} and {seed + 1} gave the same data: the task ignores its generator "
                "(or its parameters leave a single problem)"
            )
    return f"same seed, same data in {', '.join(SPLITS)}; another seed, other data"


def _windows(x: torch.Tensor, k: int) -> set[bytes]:
    """Every k-token window of every row of ``x`` (N, T), as bytes."""
    rows = x.numpy().astype(np.int32)
    return {row[i : i + k].tobytes() for row in rows for i in range(rows.shape[1] - k + 1)}


def splits(task: Task, length: int, seed: int) -> Passed:
    """The ``splits`` contract: the val and test splits do not overlap the train split where they must not.

    A synthetic task: 4 x N rows drawn per split, compared whole; with ``disjoint_splits`` no val or test row may be a
    train row, without it the test rows that are also train rows are only counted. An ``lm`` task: no
    :data:`WINDOW`-token window of a val or test sample occurs in a sample of the train split (N rows of up to 4096
    tokens).

    Raises:
        ContractFailed: naming how many rows or windows the splits share.
    """
    rows = 4 * N
    if task.kind != "lm":
        train = {row.numpy().tobytes() for row in task.sample(rows, length, _rng(seed), "train")[0]}

        def shared(split: str) -> int:
            drawn = task.sample(rows, length, _rng(seed + 1), split)[0]  # type: ignore[arg-type]
            return sum(row.numpy().tobytes() in train for row in drawn)

        if not task.disjoint_splits:
            repeats = shared("test")
            return (
                f"synthetic: {repeats} of {rows} test rows also drawn among {rows} train rows "
                "(independent draws of one distribution; not required to be 0)",
                {"repeats": repeats, "rows": rows},
            )
        for split in ("val", "test"):
            if n := shared(split):
                raise ContractFailed(
                    f"{n} of {rows} {split} rows are also train rows, although the task declares disjoint splits"
                )
        return f"synthetic, disjoint splits: no val or test row among {rows} train rows", {"repeats": 0, "rows": rows}
    long = min(4096, task.max_seq_len("train") or 4096)
    train_windows = _windows(task.sample(N, long, _rng(seed), "train")[0], WINDOW)  # a sample of the train split
    for split in ("val", "test"):
        held = task.sample(16, 8 * WINDOW, _rng(seed + 1), split)[0]  # type: ignore[arg-type]
        if shared_windows := _windows(held, WINDOW) & train_windows:
            raise ContractFailed(
                f"{len(shared_windows)} {WINDOW}-token windows of the {split} split occur in the train "
                "split: the splits overlap"
            )
    detail = f"no {WINDOW}-token window of val or test among {len(train_windows):,} of the train split"
    return detail, {"train_windows": len(train_windows)}


def lengths(task: Task, length: int, seed: int) -> Passed:
    """The ``lengths`` contract: each split states the longest row it draws, and refuses one token more.

    A synthetic task may state none (any length: 4 x ``length`` is drawn); an ``lm`` task must state one (it reads a
    corpus of finite size). One token more must raise ``ValueError``.

    Raises:
        ContractFailed: a split states no or a bad longest length, or draws a row longer than it.
    """
    notes = []
    for split in SPLITS:
        longest = task.max_seq_len(split)
        if longest is None:
            if task.kind != "synthetic":
                raise ContractFailed(f"{split}: an lm task reads a corpus of finite size and must state max_seq_len")
            task.sample(2, 4 * length, _rng(seed), split)
            continue
        if not isinstance(longest, int) or longest < task.min_seq_len:
            raise ContractFailed(f"{split}: max_seq_len {longest!r} below min_seq_len {task.min_seq_len}")
        task.sample(1, longest, _rng(seed), split)
        try:
            task.sample(1, longest + 1, _rng(seed), split)
        except ValueError:
            notes.append(f"{split} {longest:,}")
            continue
        raise ContractFailed(f"{split}: max_seq_len is {longest} but a row of {longest + 1} was drawn")
    if notes:
        return f"longest length per split, one token more refused: {', '.join(notes)}"
    return f"any length (synthetic); 4 x L = {4 * length} drawn in every split"
