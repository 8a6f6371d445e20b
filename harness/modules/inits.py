"""Initialisation of the model's linear layers: ``INITS.get(name)(linear)`` initialises one
``nn.Linear`` in place. With tokens entering at unit scale, ``normal_0.02`` at d_model 64 starts
each sub-layer's output two orders of magnitude below its input (std 0.02 against Xavier's 0.125),
so a Pre-LN residual stream does not grow with depth; under ``xavier`` it grows as Xiong et al.
(ICML 2020, Lemma 2) assume.
"""

from __future__ import annotations

from torch import nn

from harness.registry import INITS


@INITS.builtin("normal_0.02")
def normal_002(linear: nn.Linear) -> None:
    """GPT-2 (Radford et al., 2019) and nanoGPT: weight ~ N(0, 0.02^2) whatever its shape, bias 0."""
    nn.init.normal_(linear.weight, mean=0.0, std=0.02)
    if linear.bias is not None:
        nn.init.zeros_(linear.bias)


@INITS.builtin("xavier")
def xavier(linear: nn.Linear) -> None:
    """Xavier (Glorot & Bengio, AISTATS 2010), normal form: weight ~ N(0, 2 / (fan_in + fan_out)),
    bias 0; N(0, 1/C) for a C x C matrix, as Xiong et al. (ICML 2020, §3) analyse. A fused QKV
    projection (C -> 3C) is one matrix, as fairseq's fused ``in_proj``.
    """
    nn.init.xavier_normal_(linear.weight)
    if linear.bias is not None:
        nn.init.zeros_(linear.bias)
