"""The models the course measures: a small MLP, the lecture's pre-norm TransformerBlock, and a GPT stack.

Attention is written with explicit matmuls by default (no fused kernel), so PyTorch's FLOP counter sees
every FLOP and autograd's saved tensors are the textbook ones, the (B, H, T, T) softmax output included.
`fused=True` (`fused_attention` on the block and in `GPTConfig`) calls
`torch.nn.functional.scaled_dot_product_attention` instead, a FlashAttention-style kernel that never
stores the T x T matrix: for backward it keeps q, k, v, its output and one fp32 log-sum-exp per row
(B, H, T), and recomputes the attention weights. Same parameters, same outputs up to rounding.
No dropout: the course counts what a deterministic step does.

Parameter names (what `named_parameters()` prints, in this order: creation order):
    TransformerBlock   attention.qkv.weight, attention.proj.weight, ffn.up.weight, ffn.down.weight,
                       norm1.weight, norm2.weight   (+ .bias on each Linear and LayerNorm if bias=True)
    GPT                tok_emb.weight (V, d), pos_emb.weight (T_max, d), blocks.{i}.<block names>,
                       norm_f.weight, lm_head.weight (tied to tok_emb.weight unless tie_embeddings=False)
    MLP                layers.{0,2,4,...}.weight / .bias (Linear), activations in between
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from . import wire

__all__ = ["GPT", "GPTConfig", "MLP", "FeedForward", "MultiHeadAttention", "TransformerBlock", "GPT2_SMALL",
           "training_step"]


def _positive_int(value, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{what} 应是正整数 (a positive int), 得到 {value!r}")
    return value


def _norm(kind: str, d_model: int, bias: bool) -> nn.Module:
    if kind == "rms":
        return nn.RMSNorm(d_model, eps=1e-5)
    if kind == "layer":
        return nn.LayerNorm(d_model, bias=bias)
    raise ValueError(f"norm 应是 'rms' 或 'layer', 得到 {kind!r}")


class MultiHeadAttention(nn.Module):
    """Causal multi-head self-attention: one fused QKV projection (d -> 3d), the attention itself, output
    projection (d -> d). Parameters: 4 d^2 (+ 4d biases).

    `fused=False` (default): explicit matmuls and softmax; autograd keeps the (B, H, T, T) weights.
    `fused=True`: `F.scaled_dot_product_attention(q, k, v, is_causal=causal)`; it keeps no T x T tensor.
    """

    def __init__(self, d_model: int, n_heads: int, bias: bool = False, causal: bool = True, fused: bool = False):
        super().__init__()
        _positive_int(d_model, "d_model"), _positive_int(n_heads, "n_heads")
        if d_model % n_heads:
            raise ValueError(f"d_model ({d_model}) 必须能被 n_heads ({n_heads}) 整除 (divisible)")
        if not isinstance(fused, bool):
            raise ValueError(f"fused 应是 True 或 False (bool), 得到 {fused!r}")
        self.n_heads, self.head_dim, self.causal, self.fused = n_heads, d_model // n_heads, causal, fused
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.proj = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, d = x.shape
        H, hd = self.n_heads, self.head_dim
        q, k, v = self.qkv(x).split(d, dim=-1)  # each (B, T, d)
        q = q.view(B, T, H, hd).transpose(1, 2)  # (B, H, T, hd)
        k = k.view(B, T, H, hd).transpose(1, 2)  # (B, H, T, hd)
        v = v.view(B, T, H, hd).transpose(1, 2)  # (B, H, T, hd)
        if self.fused:  # one kernel: softmax(q k^T / sqrt(hd) + mask) v without storing the T x T matrix
            out = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)  # (B, H, T, hd)
            return self.proj(out.transpose(1, 2).reshape(B, T, d))  # (B, T, d)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))  # (B, H, T, T)
        if self.causal:  # an additive mask: adding a constant saves nothing for backward
            mask = torch.full((T, T), float("-inf"), device=x.device, dtype=scores.dtype).triu(1)
            scores = scores + mask  # (B, H, T, T)
        weights = F.softmax(scores, dim=-1)  # (B, H, T, T)
        out = weights @ v  # (B, H, T, hd)
        out = out.transpose(1, 2).reshape(B, T, d)  # (B, T, d)
        return self.proj(out)  # (B, T, d)


class FeedForward(nn.Module):
    """d -> d_ff -> d with GELU in between; d_ff = 4d as in the lecture. Parameters: 2 d d_ff (+ biases)."""

    def __init__(self, d_model: int, d_ff: int | None = None, bias: bool = False):
        super().__init__()
        d_ff = _positive_int(d_ff if d_ff is not None else 4 * d_model, "d_ff")
        self.up = nn.Linear(d_model, d_ff, bias=bias)
        self.down = nn.Linear(d_ff, d_model, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.gelu(self.up(x)))  # (B, T, d_ff) in between, (B, T, d) out


class TransformerBlock(nn.Module):
    """The lecture's pre-norm block: x + attention(norm1(x)), then x + ffn(norm2(x)).

    With RMSNorm and no biases its parameters are 12 d^2 + 2d (4d^2 attention, 8d^2 FFN, 2d norms).
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int | None = None, bias: bool = False, norm: str = "rms",
                 fused_attention: bool = False):
        super().__init__()
        self.attention = MultiHeadAttention(d_model, n_heads, bias=bias, fused=fused_attention)
        self.ffn = FeedForward(d_model, d_ff, bias=bias)
        self.norm1 = _norm(norm, d_model, bias)
        self.norm2 = _norm(norm, d_model, bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, T, d) -> (B, T, d)
        x = x + self.attention(self.norm1(x))
        x = x + self.ffn(self.norm2(x))
        return x


@wire.transportable
@dataclass(frozen=True)
class GPTConfig:
    """A GPT-style decoder. Defaults are the lecture's modern block (RMSNorm, no biases), GPT-2 small sized."""

    vocab_size: int = 50257  # GPT-2's BPE vocabulary
    block_size: int = 1024  # the longest sequence: rows of the learned position embedding
    n_layer: int = 12
    n_head: int = 12
    d_model: int = 768
    d_ff: int | None = None  # None: 4 * d_model, as in the lecture
    bias: bool = False  # GPT-2 had biases in every Linear and LayerNorm; modern models drop them
    norm: str = "rms"  # "rms" (the lecture's RMSNorm) or "layer" (GPT-2's LayerNorm)
    tie_embeddings: bool = True  # lm_head.weight is tok_emb.weight, as in GPT-2
    fused_attention: bool = False  # True: scaled_dot_product_attention (no T x T tensor kept for backward)

    def __post_init__(self):
        for name in ("vocab_size", "block_size", "n_layer", "n_head", "d_model"):
            _positive_int(getattr(self, name), name)
        if self.d_model % self.n_head:
            raise ValueError(f"d_model ({self.d_model}) 必须能被 n_head ({self.n_head}) 整除 (divisible)")


# GPT-2 small as OpenAI released it: 124,439,808 parameters with the tied embedding counted once.
GPT2_SMALL = GPTConfig(bias=True, norm="layer")


class GPT(nn.Module):
    """Token + position embeddings, `n_layer` TransformerBlocks, a final norm and the LM head."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        if not isinstance(config, GPTConfig):
            raise TypeError(f"GPT 需要一个 GPTConfig, 得到 {type(config).__name__}")
        self.config = config
        self.tok_emb = nn.Embedding(config.vocab_size, config.d_model)
        self.pos_emb = nn.Embedding(config.block_size, config.d_model)
        self.blocks = nn.ModuleList(
            TransformerBlock(config.d_model, config.n_head, config.d_ff, config.bias, config.norm,
                             config.fused_attention)
            for _ in range(config.n_layer))
        self.norm_f = _norm(config.norm, config.d_model, config.bias)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        # GPT-2's initialisation of the embeddings, N(0, 0.02²). PyTorch's default N(0, 1), tied to the LM head,
        # gives logits of standard deviation √d: a first loss far above ln V, and softmax probabilities below
        # FP32's smallest normal number (denormals), on which a CPU's matmuls run several times slower.
        nn.init.normal_(self.tok_emb.weight, std=0.02)
        nn.init.normal_(self.pos_emb.weight, std=0.02)
        if config.tie_embeddings:
            self.lm_head.weight = self.tok_emb.weight

    def forward(self, idx: torch.Tensor) -> torch.Tensor:  # (B, T) token ids -> (B, T, V) logits
        B, T = idx.shape
        if T > self.config.block_size:
            raise ValueError(f"序列长度 T={T} 超过 block_size={self.config.block_size}")
        pos = torch.arange(T, device=idx.device)  # (T,)
        x = self.tok_emb(idx) + self.pos_emb(pos)  # (B, T, d)
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.norm_f(x))  # (B, T, V)

    def loss(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Mean next-token cross-entropy of `idx` against `targets` (both (B, T))."""
        logits = self(idx)
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def training_step(model: GPT, optimizer: torch.optim.Optimizer, idx: torch.Tensor, amp: torch.dtype = torch.float32):
    """A zero-argument training step of `model` on the token ids `idx` (B, T), each position predicting the token at
    that position of `idx` itself (a fixed batch: what a timing needs): forward and loss under
    `torch.autocast(dtype=amp)` (off for float32), backward, `optimizer.step()`, the gradients set to None.
    Returns the step (notebook 08 times it, profiles it and counts its FLOPs)."""
    if not isinstance(model, GPT):
        raise TypeError(f"training_step 需要一个 GPT, 得到 {type(model).__name__}")

    def step() -> None:
        with torch.autocast(device_type=idx.device.type, dtype=amp, enabled=amp != torch.float32):
            loss = model.loss(idx, idx)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step


class MLP(nn.Module):
    """Linear layers of `sizes` (e.g. [784, 256, 10]) with `activation` between them, none after the last."""

    def __init__(self, sizes: Sequence[int], activation: type[nn.Module] = nn.ReLU, bias: bool = True):
        super().__init__()
        if len(sizes) < 2:
            raise ValueError(f"MLP 至少需要两个尺寸 (input and output), 得到 {list(sizes)}")
        layers: list[nn.Module] = []
        for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
            layers.append(nn.Linear(_positive_int(n_in, "size"), _positive_int(n_out, "size"), bias=bias))
            if i < len(sizes) - 2:
                layers.append(activation())
        self.layers = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)
