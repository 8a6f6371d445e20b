"""Contracts every registered component and task must meet, run by the repository's tests and by
``ablate check NAME`` alike (one implementation).

- :mod:`harness.contracts.result`: what a check returns (one :class:`~harness.contracts.result.ContractResult`
  per contract, pass / fail / refused / skipped, with its detail and seconds).
- :mod:`harness.contracts.targets`: which component or task a name means (``position=rope``,
  ``attention.kernel=linear``, ``task=copy``, or a bare registered name).
- :mod:`harness.contracts.components`: shapes, causality, determinism, finite forward and backward
  per precision, evaluation at 4 x the training length, gradients, parameters, time and memory.
- :mod:`harness.contracts.tasks`: same seed same data, answers, vocabulary, disjoint splits,
  lengths, version.
"""
