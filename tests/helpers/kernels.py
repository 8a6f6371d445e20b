"""Which registered attention kernels can run here: the parametrisation of the kernel tests."""

from __future__ import annotations

import torch

from harness.modules.kernels import KERNELS


def available_kernels(device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32) -> list[str]:
    """Registered kernel names that can run on ``device`` with ``dtype``."""
    names = []
    for name in KERNELS.names():
        try:
            KERNELS.get(name).check_available(device, dtype)
            names.append(name)
        except ValueError:
            pass
    return names
