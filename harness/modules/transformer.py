"""A decoder-only Transformer language model whose components are named by a ``TransformerConfig``.

Blocks are built as ``BLOCKS.get(name)(cfg)`` and called as ``block(x, pos, key_padding_mask)``.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from torch import Tensor, nn

from harness.modules.attention import MultiHeadAttention
from harness.modules.config import TransformerConfig
from harness.modules.ffn import FeedForward
from harness.modules.positional import PositionalEncoding
from harness.registry import BLOCKS, INITS, NORMS, POSITIONAL


class Block(nn.Module):
    """Base of the Transformer blocks: one attention and one feed-forward sub-layer, each with
    its norm. ``final_norm`` says whether the model needs a norm after the last block.
    ``forward(x, pos, key_padding_mask)``: (B, T, C) -> (B, T, C); the mask (B, T) hides padding keys.
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
    """Pre-LN (Xiong et al., ICML 2020; GPT-2): ``x + attn(norm1(x))``, ``x + ffn(norm2(x))``;
    the residual stream is never normalised, so the model applies a final norm before the head.
    """

    def forward(self, x: Tensor, pos: PositionalEncoding, key_padding_mask: Tensor | None = None) -> Tensor:
        x = x + self.attn(self.norm1(x), pos, key_padding_mask=key_padding_mask)[0]  # (B, T, C)
        return x + self.ffn(self.norm2(x))


@BLOCKS.builtin("post")
class PostNormBlock(Block):
    """Post-LN, as in Vaswani et al. (2017): ``norm1(x + attn(x))``, ``norm2(x + ffn(x))``;
    the output is already normalised, so no final norm.
    """

    final_norm = False

    def forward(self, x: Tensor, pos: PositionalEncoding, key_padding_mask: Tensor | None = None) -> Tensor:
        x = self.norm1(x + self.attn(x, pos, key_padding_mask=key_padding_mask)[0])  # (B, T, C)
        return self.norm2(x + self.ffn(x))


class TransformerLM(nn.Module):
    """Decoder-only causal language model: token embedding, positional hooks, ``n_layers``
    blocks, optional final norm, and a linear head to the vocabulary (sharing the embedding's
    weight when ``cfg.tie_embeddings``). No KV cache, no generation loop.

    Init: token embedding ~ N(0, 1/C), multiplied by sqrt(C) in ``forward`` (Vaswani et al., 2017,
    §3.4), so tokens enter at unit scale; every ``nn.Linear`` by ``INITS.get(cfg.init)``; norms
    gain 1, bias 0; the learned position table by its encoding.
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
        """Next-token logits (B, T, V) of token ids ``idx`` (B, T) in ``[0, V)``;
        ``key_padding_mask`` (B, T) bool, True at padding tokens, which no query attends to.

        Raises:
            ValueError: ``idx`` is not 2-D, or ``T`` exceeds the encoding's ``max_positions``.
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
        """Two AdamW parameter groups covering every parameter exactly once: ``weight_decay`` on
        the weights of ``nn.Linear`` layers only, 0 on the rest (embeddings: tokens, learned
        positions, and so a tied head; norms; biases)."""
        embeddings = {id(m.weight) for m in self.modules() if isinstance(m, nn.Embedding)}
        linear = {id(m.weight) for m in self.modules() if isinstance(m, nn.Linear)}
        decay_ids = linear - embeddings
        params = list(self.parameters())  # shared parameters appear once
        decay = [p for p in params if id(p) in decay_ids]
        rest = [p for p in params if id(p) not in decay_ids]
        return [{"params": decay, "weight_decay": weight_decay}, {"params": rest, "weight_decay": 0.0}]
