"""A decoder-only Transformer language model, and the layers it is built from besides attention.

The model's components are named by a ``TransformerConfig`` (what an entry of each registry is: docs/extending.md).
The layers: norms (class attribute ``normalises = False``: one that does not rescale), activations
(``gated = True``: takes a hidden vector twice as wide, as ``swiglu``), the feed-forward network, the linear layers'
initialisations. With tokens entering at unit scale, ``normal_0.02`` at d_model 64 starts each sub-layer's output
two orders of magnitude below its input (std 0.02 against Xavier's 0.125), so a Pre-LN residual stream does not grow
with depth; under ``xavier`` it grows as Xiong et al. (ICML 2020, Lemma 2) assume.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from harness.modules.attention import MultiHeadAttention
from harness.modules.config import TransformerConfig
from harness.modules.positional import PositionalEncoding
from harness.registry import ACTIVATIONS, BLOCKS, INITS, NORMS, POSITIONAL

# Layer normalisation (Ba et al., 2016): centre and scale over C, learned gain and bias, eps 1e-5.
NORMS.builtin("layernorm")(nn.LayerNorm)


@NORMS.builtin("rmsnorm")
class RMSNorm(nn.Module):
    """Root-mean-square layer normalisation (Zhang & Sennrich, NeurIPS 2019).

    ``y = x / sqrt(mean(x^2) + eps) * g``, no centring and no bias. Normalises in float32 and casts back to the input
    dtype (as LLaMA does).

    Args:
        d_model: The width C of ``x`` and of the gain ``g`` (initialised to ones).
        eps: Added to the mean square.
    """

    def __init__(self, d_model: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x: Tensor) -> Tensor:
        """``x`` (..., C) normalised over its last dim: same shape and dtype."""
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return (xf * self.weight.float()).to(x.dtype)

    def extra_repr(self) -> str:
        """The gain's size and ``eps``, as the module's ``repr`` shows them."""
        return f"{self.weight.numel()}, eps={self.eps}"


@NORMS.builtin("none")
class NoNorm(nn.Identity):
    """No normalisation, ``y = x`` (the arm without LayerNorm of claim ``layernorm-needed``).

    With Pre-LN the residual stream and the final projection then see unnormalised activations; with Post-LN the
    block is a plain residual block. ``d_model`` is unused.
    """

    normalises = False


@INITS.builtin("normal_0.02")
def normal_002(linear: nn.Linear) -> None:
    """GPT-2 (Radford et al., 2019) and nanoGPT: weight ~ N(0, 0.02^2) whatever its shape, bias 0."""
    nn.init.normal_(linear.weight, mean=0.0, std=0.02)
    if linear.bias is not None:
        nn.init.zeros_(linear.bias)


@INITS.builtin("xavier")
def xavier(linear: nn.Linear) -> None:
    """Xavier (Glorot & Bengio, AISTATS 2010), normal form: weight ~ N(0, 2 / (fan_in + fan_out)), bias 0.

    N(0, 1/C) for a C x C matrix, as Xiong et al. (ICML 2020, §3) analyse. A fused QKV projection (C -> 3C) is one
    matrix, as fairseq's fused ``in_proj``.
    """
    nn.init.xavier_normal_(linear.weight)
    if linear.bias is not None:
        nn.init.zeros_(linear.bias)


# ReLU, as in Vaswani et al. (2017), Eq. 2.
ACTIVATIONS.builtin("relu")(nn.ReLU)
# GELU (Hendrycks & Gimpel, 2016), exact erf form, as in BERT and GPT-2 (which uses the tanh form).
ACTIVATIONS.builtin("gelu")(nn.GELU)


@ACTIVATIONS.builtin("swiglu")
class SwiGLU(nn.Module):
    """The gated linear unit with Swish (SiLU) of Shazeer (2020), "GLU Variants Improve Transformer", Eq. 6.

    ``FFN(x) = (Swish(x W) * (x V)) W2``. Here ``[x W, x V]`` is the output of the FFN's input projection, split in
    halves: ``silu(a) * b``, (..., 2F) -> (..., F).

    The FFN then has three C x F matrices instead of two: 1.5x the parameters at the same
    ``d_ff`` (Shazeer and LLaMA shrink it to 2/3). Unlike Shazeer we keep the projections' biases.
    """

    gated: ClassVar[bool] = True

    def forward(self, x: Tensor) -> Tensor:
        """``silu(a) * b`` of the halves ``[a, b]`` of ``x`` (..., 2F): (..., F)."""
        a, b = x.chunk(2, dim=-1)
        return F.silu(a) * b


class FeedForward(nn.Module):
    """``Linear(C, d_ff) -> activation -> Linear(d_ff, C) -> dropout`` (Vaswani et al., 2017, §3.3).

    Applied to each position independently: (B, T, C) -> (B, T, C).

    Args:
        d_model: The model width C.
        d_ff: The hidden width F (after the gate).
        activation: An ``ACTIVATIONS`` entry; with a gated one (``swiglu``) the input projection is
            ``Linear(C, 2 d_ff)``.
        dropout: Dropout probability on the output.

    Raises:
        UnknownNameError: For an unknown activation.
    """

    def __init__(self, d_model: int, d_ff: int, activation: str = "gelu", dropout: float = 0.0) -> None:
        super().__init__()
        act_cls = ACTIVATIONS.get(activation)
        width = 2 * d_ff if getattr(act_cls, "gated", False) else d_ff
        self.fc_in = nn.Linear(d_model, width)
        self.act = act_cls()
        self.fc_out = nn.Linear(d_ff, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        """``x`` (B, T, C) through the network, each position on its own: (B, T, C)."""
        return self.drop(self.fc_out(self.act(self.fc_in(x))))  # hidden (B, T, d_ff) or (B, T, 2 d_ff)


class Block(nn.Module):
    """Base of the Transformer blocks: one attention and one feed-forward sub-layer, each with its norm.

    ``final_norm`` says whether the model needs a norm after the last block. ``forward(x, pos, key_padding_mask)``:
    (B, T, C) -> (B, T, C); the mask (B, T) hides padding keys.

    Args:
        cfg: The model's config: the sizes, the norm, the attention's components, the activation, the dropout.
    """

    final_norm: ClassVar[bool] = True

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.norm1 = NORMS.get(cfg.norm)(cfg.d_model)
        self.attn = MultiHeadAttention(
            cfg.d_model, cfg.n_heads, cfg.kernel, cfg.dropout, True, cfg.qkv, cfg.scale, cfg.mask_fill, cfg.head_split
        )
        self.norm2 = NORMS.get(cfg.norm)(cfg.d_model)
        self.ffn = FeedForward(cfg.d_model, cfg.ffn_dim, cfg.activation, cfg.dropout)


@BLOCKS.builtin("pre")
class PreNormBlock(Block):
    """Pre-LN (Xiong et al., ICML 2020; GPT-2): ``x + attn(norm1(x))``, ``x + ffn(norm2(x))``.

    The residual stream is never normalised, so the model applies a final norm before the head.
    """

    def forward(self, x: Tensor, pos: PositionalEncoding, key_padding_mask: Tensor | None = None) -> Tensor:
        """``x`` (B, T, C) -> (B, T, C) with the shared encoding ``pos``; ``key_padding_mask`` (B, T) hides padding."""
        x = x + self.attn(self.norm1(x), pos, key_padding_mask=key_padding_mask)[0]  # (B, T, C)
        return x + self.ffn(self.norm2(x))


@BLOCKS.builtin("post")
class PostNormBlock(Block):
    """Post-LN, as in Vaswani et al. (2017): ``norm1(x + attn(x))``, ``norm2(x + ffn(x))``.

    The output is already normalised, so no final norm.
    """

    final_norm = False

    def forward(self, x: Tensor, pos: PositionalEncoding, key_padding_mask: Tensor | None = None) -> Tensor:
        """``x`` (B, T, C) -> (B, T, C) with the shared encoding ``pos``; ``key_padding_mask`` (B, T) hides padding."""
        x = self.norm1(x + self.attn(x, pos, key_padding_mask=key_padding_mask)[0])  # (B, T, C)
        return self.norm2(x + self.ffn(x))


class TransformerLM(nn.Module):
    """Decoder-only causal language model; no KV cache, no generation loop.

    Token embedding, positional hooks, ``n_layers`` blocks, optional final norm, and a linear head to the vocabulary
    (sharing the embedding's weight when ``cfg.tie_embeddings``).

    Init: token embedding ~ N(0, 1/C), multiplied by sqrt(C) in ``forward`` (Vaswani et al., 2017,
    §3.4), so tokens enter at unit scale; every ``nn.Linear`` by ``INITS.get(cfg.init)``; norms
    gain 1, bias 0; the learned position table by its encoding.

    Args:
        cfg: The architecture: every size and the registry name of every component.
    """

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.cfg = cfg
        block_cls = BLOCKS.get(cfg.norm_position)
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos = POSITIONAL.get(cfg.position)(cfg)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(block_cls(cfg) for _ in range(cfg.n_layers))
        self.norm_f = NORMS.get(cfg.norm)(cfg.d_model) if block_cls.final_norm else nn.Identity()
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        for module in self.modules():
            if isinstance(module, nn.Linear):
                INITS.get(cfg.init)(module)
        nn.init.normal_(self.tok_emb.weight, mean=0.0, std=cfg.d_model**-0.5)
        if cfg.tie_embeddings:
            self.head.weight = self.tok_emb.weight

    def forward(self, idx: Tensor, key_padding_mask: Tensor | None = None) -> Tensor:
        """Next-token logits (B, T, V) of token ids ``idx`` (B, T).

        Args:
            idx: (B, T) token ids in ``[0, V)``.
            key_padding_mask: (B, T) bool, True at padding tokens, which no query attends to.

        Returns:
            The logits, (B, T, V).

        Raises:
            ValueError: When ``idx`` is not 2-D or ``T`` exceeds the encoding's ``max_positions``.
        """
        if idx.dim() != 2:
            raise ValueError(f"idx must have shape (B, T), got {tuple(idx.shape)}")
        T = idx.size(1)
        limit = self.pos.max_positions(self.cfg)
        if limit is not None and limit < T:
            raise ValueError(f"sequence length T={T} exceeds max_len={limit} of position '{self.cfg.position}'")
        x = self.tok_emb(idx) * math.sqrt(self.cfg.d_model)  # (B, T, C)
        x = self.drop(self.pos.add_to_embeddings(x))  # (B, T, C)
        for block in self.blocks:
            x = block(x, self.pos, key_padding_mask)  # (B, T, C)
        return self.head(self.norm_f(x))  # (B, T, V)

    def kernel_backends(self) -> list[str]:
        """Sorted names of the attention backends that have run."""
        return sorted({b for block in self.blocks for b in block.attn.kernel.backends})

    def num_parameters(self) -> int:
        """Number of distinct parameters (a tied head counts once)."""
        return sum(p.numel() for p in self.parameters())

    def parameter_groups(self, weight_decay: float) -> list[dict[str, Any]]:
        """Two AdamW parameter groups covering every parameter exactly once.

        ``weight_decay`` on the weights of ``nn.Linear`` layers only, 0 on the rest (embeddings: tokens, learned
        positions, and so a tied head; norms; biases).
        """
        decay_ids = {id(m.weight) for m in self.modules() if isinstance(m, nn.Linear)}
        decay_ids -= {id(m.weight) for m in self.modules() if isinstance(m, nn.Embedding)}  # a tied head
        params = list(self.parameters())  # shared parameters appear once
        decay = [p for p in params if id(p) in decay_ids]
        rest = [p for p in params if id(p) not in decay_ids]
        return [{"params": decay, "weight_decay": weight_decay}, {"params": rest, "weight_decay": 0.0}]
