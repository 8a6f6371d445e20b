"""What a run's config means before it trains.

For the pre-run checks of :mod:`harness.experiment.grid` and for :func:`harness.training.loop.train`:
the pure-torch model config (:func:`transformer_config`, so that no caller builds one by hand) and
Lightning's check of ``--devices`` and ``--strategy``. Torch and Lightning are imported only when
used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.config import RunConfig
from harness.errors import AblateError

if TYPE_CHECKING:
    from harness.modules import TransformerConfig


def transformer_config(cfg: RunConfig, vocab_size: int) -> TransformerConfig:
    """The :class:`harness.modules.TransformerConfig` of ``cfg`` for a task of ``vocab_size`` tokens.

    It takes the keys of ``model``, ``attention`` and ``block``, the FFN's width and activation.

    Raises:
        KeyError, ValueError: an unknown component name or inconsistent shapes (as ``TransformerConfig``).
    """
    from harness.modules import TransformerConfig

    sections = cfg.model.model_dump() | cfg.attention.model_dump() | cfg.block.model_dump()
    return TransformerConfig(
        vocab_size=vocab_size, d_ff=cfg.ffn.width(cfg.model.d_model), activation=cfg.ffn.activation, **sections
    )


def check_devices(devices: int | str, strategy: str) -> None:
    """Refuse ``--devices``/``--strategy`` values Lightning refuses on this machine, before any run.

    The :class:`lightning.pytorch.Trainer` a run would build is built (nothing is launched).

    Raises:
        AblateError: one line with Lightning's reason.
    """
    import lightning.pytorch as L

    try:
        L.Trainer(accelerator="auto", devices=devices, strategy=strategy, logger=False, enable_checkpointing=False)
    except Exception as exc:  # noqa: BLE001  Lightning raises ValueError, TypeError or its own
        reason = " ".join(str(exc).split())
        raise AblateError(f"--devices {devices} --strategy {strategy}: {reason}") from None
