"""TransformerConfig validation, causality of every combination of components (with the contract
suite's :func:`~harness.contracts.causal.causality`), parameter groups."""

import itertools

import pytest
import torch
from torch import nn

from harness.contracts.causal import causality
from harness.modules import (
    ACTIVATIONS,
    BLOCKS,
    HEAD_SPLITS,
    KERNELS,
    MASK_FILLS,
    NORMS,
    POSITIONAL,
    QKV,
    SCALES,
    TransformerConfig,
    TransformerLM,
)
from harness.registry import UnknownNameError
from helpers.kernels import available_kernels

V = 13


def tiny(**kw) -> TransformerLM:
    torch.manual_seed(0)
    base = {"vocab_size": V, "d_model": 16, "n_heads": 2, "n_layers": 2, "max_len": 16}
    cfg = TransformerConfig(**{**base, **kw})
    return TransformerLM(cfg).eval()


# --- causality of every combination (the contract suite checks each component alone) ----------


def supported(**kw) -> bool:
    """Whether the config accepts this combination (a refusal is tested in test_unsupported_...)."""
    try:
        TransformerConfig(vocab_size=V, d_model=16, n_heads=2, max_len=16, **kw)
        return True
    except ValueError:
        return False


POSITION_KERNEL = [
    (p, k)
    for p, k in itertools.product(POSITIONAL.names(), available_kernels("cpu"))
    if supported(position=p, kernel=k)
]


@pytest.mark.parametrize(("position", "kernel"), POSITION_KERNEL)
def test_causal_for_every_position_and_kernel(position, kernel):
    causality(tiny(position=position, kernel=kernel), length=12)


@pytest.mark.parametrize(("position", "kernel"), POSITION_KERNEL)
def test_causal_with_left_padding(position, kernel):
    """With padding keys hidden, future tokens still never reach the logits of real positions
    (fully masked rows at the padding positions are a kernel's choice: see probes)."""
    # -inf makes the padding rows NaN where the fill is written into explicit scores (math, additive_mask)
    model = tiny(
        position=position, kernel=kernel, mask_fill="-1e4" if KERNELS.get(kernel).honours_mask_fill else "-inf"
    )
    pad = torch.zeros(1, 12, dtype=torch.bool)
    pad[0, :3] = True
    causality(model, length=12, key_padding_mask=pad)


@pytest.mark.parametrize(
    ("qkv", "scale", "head_split", "fill"),
    list(itertools.product(QKV.names(), SCALES.names(), HEAD_SPLITS.names(), MASK_FILLS.names())),
)
def test_causal_for_every_projection_scale_split_and_fill(qkv, scale, head_split, fill):
    model = tiny(qkv=qkv, scale=scale, head_split=head_split, mask_fill=fill, kernel="math", position="rope")
    causality(model, length=12)


def test_unsupported_combinations_fail_at_config_time():
    with pytest.raises(ValueError, match="kernel 'linear' cannot add the attention bias of position 'alibi'"):
        TransformerConfig(vocab_size=V, kernel="linear", position="alibi")
    with pytest.raises(ValueError, match="set model.dropout=0"):
        TransformerConfig(vocab_size=V, kernel="linear", dropout=0.1)
    with pytest.raises(ValueError, match="no score scale"):
        TransformerConfig(vocab_size=V, kernel="linear", scale="d_model")
    with pytest.raises(ValueError, match="needs explicit scores"):
        TransformerConfig(vocab_size=V, kernel="sdpa", mask_fill="-1e9")


def test_kernel_backends_are_reported():
    model = tiny(kernel="flash")
    model(torch.zeros(1, 4, dtype=torch.long))
    assert model.kernel_backends() == ["flash_attention"]


@pytest.mark.parametrize(
    ("block", "norm", "activation"),
    list(itertools.product(BLOCKS.names(), NORMS.names(), ACTIVATIONS.names())),
)
def test_causal_for_every_block_norm_activation(block, norm, activation):
    causality(tiny(norm_position=block, norm=norm, activation=activation, position="rope"), length=12)


@pytest.mark.parametrize("block", BLOCKS.names())
def test_final_norm_follows_block(block):
    model = tiny(norm_position=block)
    assert isinstance(model.norm_f, nn.Identity) != BLOCKS.get(block).final_norm


# --- config ----------------------------------------------------------------------------------


def test_config_heads_must_divide_width():
    with pytest.raises(ValueError, match="d_model=64 is not divisible by n_heads=3"):
        TransformerConfig(vocab_size=V, d_model=64, n_heads=3)


@pytest.mark.parametrize(
    ("field", "typo", "suggestion"),
    [
        ("position", "rop", "rope"),
        ("kernel", "sdp", "sdpa"),
        ("norm", "rms_norm", "rmsnorm"),
        ("norm_position", "pree", "pre"),
        ("activation", "gleu", "gelu"),
        ("qkv", "shard", "shared"),
        ("scale", "d_heads", "d_head"),
        ("mask_fill", "-1e8", "-1e9"),
        ("head_split", "corect", "correct"),
        ("init", "xavir", "xavier"),
    ],
)
def test_config_unknown_name_suggests(field, typo, suggestion):
    with pytest.raises(UnknownNameError, match=f"did you mean '{suggestion}'"):
        TransformerConfig(vocab_size=V, **{field: typo})


def test_config_learned_needs_max_len():
    with pytest.raises(ValueError, match="max_len"):
        TransformerConfig(vocab_size=V, position="learned")


@pytest.mark.parametrize("bad", [{"vocab_size": 0}, {"n_layers": 0}, {"dropout": 1.0}, {"d_ff": -1}])
def test_config_rejects_bad_values(bad):
    with pytest.raises(ValueError):
        TransformerConfig(**{"vocab_size": V, **bad})


def test_config_derived_fields():
    cfg = TransformerConfig(vocab_size=V, d_model=32, n_heads=4)
    assert (cfg.d_head, cfg.ffn_dim) == (8, 128)
    assert TransformerConfig(vocab_size=V, d_ff=10).ffn_dim == 10


# --- model -----------------------------------------------------------------------------------


def test_learned_beyond_max_len_raises():
    model = tiny(position="learned", max_len=8)
    model(torch.zeros(1, 8, dtype=torch.long))
    with pytest.raises(ValueError, match=r"T=9.*max_len=8"):
        model(torch.zeros(1, 9, dtype=torch.long))


def test_init_and_tying():
    model = tiny(d_model=64, n_heads=4, vocab_size=500)
    assert model.head.weight is model.tok_emb.weight
    assert model.tok_emb.weight.std().item() == pytest.approx(64**-0.5, rel=0.1)
    assert model.blocks[0].attn.qkv.q_proj.weight.std().item() == pytest.approx(0.02, rel=0.1)
    assert (model.blocks[0].ffn.fc_in.bias == 0).all()
    untied = tiny(tie_embeddings=False)
    assert untied.head.weight is not untied.tok_emb.weight
    n_head = V * 16
    assert untied.num_parameters() == tiny().num_parameters() + n_head


def test_xavier_init_scales_each_linear_by_its_fans_and_leaves_the_rest():
    """``xavier``: std sqrt(2 / (fan_in + fan_out)) per nn.Linear (1/sqrt(C) for C x C, sqrt(2 / 5C)
    for the FFN's projections), biases zero; embeddings and norms as under the default."""
    c = 128
    default, xavier = (
        tiny(d_model=c, n_heads=4, vocab_size=500),
        tiny(d_model=c, n_heads=4, vocab_size=500, init="xavier"),
    )
    block = xavier.blocks[0]
    assert block.attn.qkv.q_proj.weight.std().item() == pytest.approx(c**-0.5, rel=0.05)
    for linear in (block.ffn.fc_in, block.ffn.fc_out):
        assert linear.weight.std().item() == pytest.approx((2 / (5 * c)) ** 0.5, rel=0.05)
        assert (linear.bias == 0).all()
    assert torch.equal(xavier.tok_emb.weight, default.tok_emb.weight)  # as many draws before it
    assert torch.equal(xavier.blocks[0].norm1.weight, default.blocks[0].norm1.weight)
    assert default.blocks[0].ffn.fc_out.weight.std().item() == pytest.approx(0.02, rel=0.05)


@pytest.mark.parametrize(("position", "tie"), [("learned", True), ("learned", False), ("rope", True)])
@pytest.mark.parametrize("block", BLOCKS.names())
def test_parameter_groups_cover_every_parameter_once(position, tie, block):
    model = tiny(position=position, tie_embeddings=tie, norm_position=block)
    decay, rest = model.parameter_groups(0.1)
    assert decay["weight_decay"] == 0.1 and rest["weight_decay"] == 0.0
    ids = [id(p) for p in decay["params"]] + [id(p) for p in rest["params"]]
    assert len(ids) == len(set(ids))
    assert set(ids) == {id(p) for p in model.parameters()}
    linear = {id(m.weight) for m in model.modules() if isinstance(m, nn.Linear)}
    assert {id(p) for p in decay["params"]} <= linear
    assert all(p.dim() == 2 for p in decay["params"])
    assert id(model.tok_emb.weight) not in {id(p) for p in decay["params"]}
    if position == "learned":
        assert id(model.pos.table.weight) in {id(p) for p in rest["params"]}
    torch.optim.AdamW(model.parameter_groups(0.1))  # accepted as is


def test_unseen_learned_positions_keep_initial_values():
    """The phenomenon the learned docstring documents: rows never trained stay exactly at init."""
    model = tiny(position="learned", max_len=16).train()
    before = model.pos.table.weight.detach().clone()
    opt = torch.optim.AdamW(model.parameter_groups(0.1), lr=1e-2)
    for _ in range(3):
        idx = torch.randint(0, V, (4, 6))
        loss = nn.functional.cross_entropy(model(idx).flatten(0, 1), idx.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
    after = model.pos.table.weight.detach()
    assert not torch.equal(after[:6], before[:6])
    assert torch.equal(after[6:], before[6:])
