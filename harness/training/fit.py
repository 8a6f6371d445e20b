"""What a run's config means before it trains: the pure-torch model config a
:class:`~harness.config.RunConfig` describes (:func:`transformer_config`, which the pre-run checks
of :mod:`harness.experiment.grid` and :func:`harness.training.loop.train` both build, so that no
caller builds a model config by hand), and Lightning's check of ``--devices`` and ``--strategy``.

Imports nothing heavy at module level: torch and Lightning are imported when a model config is
built or the devices are checked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.config import RunConfig
from harness.errors import AblateError

if TYPE_CHECKING:
    from harness.modules import TransformerConfig


def transformer_config(cfg: RunConfig, vocab_size: int) -> TransformerConfig:
    """The :class:`harness.modules.TransformerConfig` of a run config ``cfg`` (a ``RunConfig``)
    for a task of ``vocab_size`` tokens.

    Raises:
        KeyError, ValueError: an unknown component name or inconsistent shapes (as ``TransformerConfig``).
    """
    from harness.modules import TransformerConfig

    m, a = cfg.model, cfg.attention
    return TransformerConfig(
        vocab_size=vocab_size,
        d_model=m.d_model,
        n_heads=m.n_heads,
        n_layers=m.n_layers,
        d_ff=cfg.ffn.width(m.d_model),
        max_len=m.max_len,
        position=m.position,
        kernel=a.kernel,
        qkv=a.qkv,
        scale=a.scale,
        mask_fill=a.mask_fill,
        head_split=a.head_split,
        norm=cfg.block.norm,
        norm_position=cfg.block.norm_position,
        activation=cfg.ffn.activation,
        dropout=m.dropout,
        learned_init_std=m.learned_init_std,
        tie_embeddings=m.tie_embeddings,
        init=m.init,
    )


def check_devices(devices: int | str, strategy: str) -> None:
    """Lightning's own check of ``devices`` and ``strategy`` (``--devices``, ``--strategy``) on this
    machine, by building the :class:`lightning.pytorch.Trainer` a run would build with them (nothing
    is launched), so that a bad value is refused before any run rather than failing every run.

    Raises:
        AblateError: one line with Lightning's reason.
    """
    import lightning.pytorch as L

    try:
        L.Trainer(
            accelerator="auto",
            devices=devices,
            strategy=strategy,
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
        )
    except Exception as exc:  # noqa: BLE001  Lightning raises ValueError, TypeError or its own
        reason = " ".join(str(exc).split())
        raise AblateError(f"--devices {devices} --strategy {strategy}: {reason}") from None
