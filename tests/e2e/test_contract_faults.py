"""``ablate check``'s ``answers`` contract holds at every scored position: a task that scores only
each row's last position, its target the input token there, is caught whatever its vocabulary."""

from __future__ import annotations

import numpy as np
import pytest

from harness.contracts.tasks import check_task
from harness.tasks import IGNORE_INDEX, TASKS, Task, TaskParams
from helpers import contract_result


class LastEcho(Task):
    """Random tokens of a large vocabulary, one scored position per row, its last, whose target is
    the input token at that same position (declared as hiding its answers)."""

    name, version, kind, answers_in_input = "last_echo", "1", "synthetic", False
    Params = TaskParams
    vocab_size, min_seq_len = 256, 4

    def max_seq_len(self, split):
        return None

    def _generate(self, n, seq_len, rng, split):
        import torch

        x = rng.integers(0, self.vocab_size, size=(n, seq_len))
        y = np.full((n, seq_len), IGNORE_INDEX)
        y[:, -1] = x[:, -1]
        return torch.from_numpy(x), torch.from_numpy(y)


@pytest.mark.parametrize("vocab", [16, 256, 4096])
def test_a_target_that_is_the_input_at_each_rows_last_position_fails_answers(register, vocab: int) -> None:
    cls = type("LastEcho", (LastEcho,), {"vocab_size": vocab})
    register(TASKS, cls.name, cls)
    answers = contract_result(check_task(cls.name), "answers")
    assert answers.status == "fail", answers
    assert "readable from the input token at its own position" in answers.detail, answers.detail
