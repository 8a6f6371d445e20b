"""The task contract: every task is a causal language-modelling problem.

Its problems are drawn by :meth:`Task.sample` from a numpy ``Generator`` alone (the same generator state always gives
identical tensors).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, get_args

import numpy as np
import pydantic

from harness.bounds import IntBounded
from harness.errors import pydantic_message
from harness.registry import did_you_mean

if TYPE_CHECKING:  # torch is imported where tensors are made: `ablate list` stays fast
    from torch import Tensor

IGNORE_INDEX = -100  # the target of a position that takes no loss (PyTorch's ``cross_entropy`` default)

Split = Literal["train", "val", "test"]
SPLITS: tuple[Split, ...] = get_args(Split)


class DataUnavailableError(RuntimeError):
    """A task's data file could not be found, downloaded or verified; the message says the fix."""


@dataclass(frozen=True)
class Chance:
    """What a model scores that has learned nothing of a task but the distribution of its answers.

    Attributes:
        loss: Nats per scored token: the entropy of the scored targets' marginal distribution (a model that predicts
            it, and nothing else, scores exactly that in expectation).
        acc: The majority baseline's accuracy, a fraction of scored tokens (synthetic tasks).
        basis: What the chance level is based on, in words.
    """

    loss: float
    acc: float | None
    basis: str

    @classmethod
    def uniform(cls, n: int, what: str) -> Chance:
        """Answers drawn uniformly from ``n`` tokens: loss ln(n), accuracy 1 / n."""
        return cls(math.log(n), 1.0 / n, f"uniform over the {n} {what}")


class TaskParams(IntBounded):
    """Base of every task's ``Params``: unknown fields are errors, instances are immutable.

    Every integer is at most 2**31 - 1.
    """

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)


class Task(ABC):
    """Base class of all tasks: causal language-modelling problems drawn by :meth:`sample`.

    A subclass sets the class attributes and ``Params``, and defines ``vocab_size``, :meth:`_generate` and, where not
    1 and None, ``min_seq_len`` and :meth:`max_seq_len`.

    Args:
        params: The parameters; ``self.params`` holds them validated, an instance of ``Params`` (``None``: all
            defaults).
        data_dir: The directory of data files.
        near: The folder of the ablation file that names the task, where a relative data path is looked up first (as
            its ``plugins:`` paths are).

    Raises:
        ValueError: Naming each param that is unknown or invalid.
    """

    name: ClassVar[str]  # the registry name, permanent
    version: ClassVar[str]  # bumped whenever the data generated for a given seed changes; stored with results
    # "synthetic": answer positions scored (accuracy, exact match); "lm": every position (nats/token, perplexity)
    kind: ClassVar[Literal["synthetic", "lm"]]
    # whether a scored target is also the next input token (teacher forcing); False: answers are targets
    # only (MQAR). Either way a target is never readable from the input at its own position (contract answers).
    answers_in_input: ClassVar[bool] = True
    # synthetic: no val or test row equals a train row (contract splits checks it); an lm task's never do
    disjoint_splits: ClassVar[bool] = False
    # the padding token id (None: none), hidden from attention by the training layer, never scored
    pad_id: ClassVar[int | None] = None
    Params: ClassVar[type[TaskParams]] = TaskParams
    example_params: ClassVar[dict[str, Any] | None] = None  # for contracts when the defaults cannot be built

    def __init__(
        self, params: Mapping[str, Any] | None = None, data_dir: Path | str | None = None, near: Path | None = None
    ):
        try:
            self.params = self.Params.model_validate(dict(params or {}))
        except pydantic.ValidationError as err:
            raise ValueError(
                f"invalid params for task {self.name!r}: " + _problems(err, list(self.Params.model_fields))
            ) from err
        self.data_dir = Path(data_dir) if data_dir is not None else None
        self.near = near

    @property
    @abstractmethod
    def vocab_size(self) -> int:
        """Number of token ids; every input and every scored target is in ``[0, vocab_size)``."""

    @property
    def token_bytes(self) -> Tensor | None:
        """``(V,)`` int64: how many UTF-8 bytes each token id stands for; or ``None``.

        So that a loss in nats per token becomes bits per byte (``bpb``); ``None`` (synthetic tasks, and
        ``tinyshakespeare``, whose stored runs predate ``bpb``) reports no ``bpb``.
        """

    @property
    def chance(self) -> Chance | None:
        """The task's chance level (:class:`Chance`): what its held-out loss reads when a run learned nothing of it.

        A run whose validation loss never gets clear of it is ``stalled`` (:func:`harness.errors.stall_reason`).
        ``None`` (the default, for a task that does not state it): no run of the task is ever called stalled.
        """
        return None

    @property
    def min_seq_len(self) -> int:
        """Smallest ``seq_len`` this task can generate; :meth:`sample` raises below it."""
        return 1

    def max_seq_len(self, split: Split) -> int | None:
        """Longest ``seq_len`` :meth:`sample` can draw from ``split`` (``None``, the default: any).

        Known without loading the data, so that planning checks every length before any run starts.
        """

    def check_available(self) -> None:
        """Make sure the task's data can be had (found, downloaded, verified) before any run starts.

        Raises:
            DataUnavailableError: When it cannot; its message says how to provide it.
        """

    def sample(self, n: int, seq_len: int, rng: np.random.Generator, split: Split = "train") -> tuple[Tensor, Tensor]:
        """Draw ``n`` (N) problems of input length ``seq_len`` (T) from ``split``.

        Args:
            n: The number of problems N.
            seq_len: The input length T.
            rng: The only source of randomness.
            split: ``"train"``, ``"val"`` (tuning) or ``"test"`` (comparisons).

        Returns:
            ``(inputs, targets)``, each ``(N, T)`` int64; ``targets[i, t]`` is the token that follows
            ``inputs[i, :t + 1]``, or :data:`IGNORE_INDEX` where no loss is taken.

        Raises:
            ValueError: For ``n`` < 1, a ``seq_len`` out of the task's bounds or an unknown split.
        """
        if split not in SPLITS:
            raise ValueError(
                f"unknown split {split!r}{did_you_mean(str(split), SPLITS)}; choose one of: {', '.join(SPLITS)}"
            )
        if int(n) != n or n < 1:
            raise ValueError(f"n must be a positive integer, got {n!r}")
        if int(seq_len) != seq_len or seq_len < self.min_seq_len:
            raise ValueError(
                f"task {self.name!r} with {self.params!r} needs seq_len >= {self.min_seq_len}, got {seq_len!r}"
            )
        if (longest := self.max_seq_len(split)) is not None and seq_len > longest:
            raise ValueError(
                f"task {self.name!r} provides at most seq_len {longest} from its {split!r} split, got {seq_len!r}"
            )
        inputs, targets = self._generate(int(n), int(seq_len), rng, split)
        assert inputs.shape == targets.shape == (n, seq_len), (inputs.shape, targets.shape)
        import torch

        assert inputs.dtype == targets.dtype == torch.long
        return inputs, targets

    @abstractmethod
    def _generate(self, n: int, seq_len: int, rng: np.random.Generator, split: Split) -> tuple[Tensor, Tensor]:
        """Produce ``(inputs, targets)``, each ``(N, T)`` int64; arguments are already checked."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.params!r})"


def _problems(err: pydantic.ValidationError, fields: list[str]) -> str:
    """Every problem of ``err``, each naming its field (an unknown one with the closest valid name)."""
    problems = []
    for e in err.errors():
        field = ".".join(str(p) for p in e["loc"])
        if not field:  # a check across fields; its message names them
            problems.append(pydantic_message(e))
        elif e["type"] == "extra_forbidden":
            problems.append(
                f"unknown param {field!r}{did_you_mean(field, fields)}; valid params: {', '.join(fields) or 'none'}"
            )
        else:
            problems.append(f"param {field!r}: {e['msg']} (got {e.get('input')!r})")
    return "; ".join(problems)
