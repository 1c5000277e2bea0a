"""Tensor parallelism as Megatron-LM writes it (Shoeybi et al. 2019; Korthikanti et al. 2022 for sequence
parallelism), on the course's TransformerBlock: run by lecture2.distributed's workers on a live group.

`TensorParallelBlock(block, group)` takes a whole `models.TransformerBlock` (the same weights on every rank: the
same seed) and keeps only this rank's part of it:

    attention.qkv   column-parallel: the q, k and v rows of this rank's n_heads/t heads   (3d/t x d)
    attention.proj  row-parallel: the columns that read those heads                      (d x d/t), bias whole
    ffn.up          column-parallel: d_ff/t rows                                          (d_ff/t x d)
    ffn.down        row-parallel: d_ff/t columns                                          (d x d_ff/t), bias whole
    norm1, norm2    whole on every rank (d each): they act on the whole hidden vector

The collectives per block (x is the (B, T, d) activation, S its bytes):

    without SP   forward: all-reduce after proj and after down (2 x S); backward: all-reduce of the gradient
                 that flows into each norm's output (the "f" operator's backward: every rank's column-parallel
                 layer sends back a partial gradient), 2 x S. Four all-reduces of S per block per step.
    with SP      the norms and residuals work on T/t of the sequence. Forward: an all-gather before each
                 column-parallel layer, a reduce-scatter after each row-parallel one. The column-parallel layer keeps
                 only its T/t input for backward and gathers it again there (Megatron's
                 LinearWithGradAccumulationAndAsyncCommunication; what makes SP's activations 1/t, Korthikanti §4.2.2),
                 then reduce-scatters its input's gradient; the row-parallel one all-gathers its output's gradient.
                 Per block and step: 6 all-gathers and 4 reduce-scatters of S; the norms' weight gradients are partial
                 on each rank and all-reduced once more (2d values).

A row-parallel layer's bias is added once, after the reduction (adding it on every rank would count it t times).
"""
from __future__ import annotations

import math

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

__all__ = ["TensorParallelBlock", "column_rows", "shard_of"]


def column_rows(d: int, n_heads: int, t: int, rank: int) -> torch.Tensor:
    """Row indices of the fused qkv weight (3d x d) that rank `rank` of `t` keeps: its heads' q, k and v rows."""
    per = d // t
    own = torch.arange(rank * per, (rank + 1) * per)
    return torch.cat([own, own + d, own + 2 * d])


def shard_of(n: int, t: int, rank: int) -> slice:
    per = n // t
    return slice(rank * per, (rank + 1) * per)


class _CopyToParallel(torch.autograd.Function):
    """Megatron's "f": identity forward, all-reduce of the gradient backward."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x

    @staticmethod
    def backward(ctx, grad):
        grad = grad.contiguous()
        dist.all_reduce(grad, group=ctx.group)
        return grad, None


class _ReduceFromParallel(torch.autograd.Function):
    """Megatron's "g": all-reduce forward, identity backward."""

    @staticmethod
    def forward(ctx, x, group):
        x = x.contiguous()
        dist.all_reduce(x, group=group)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad, None


def _gather_seq(x: torch.Tensor, group) -> torch.Tensor:
    """(T/t, B, d) on each rank -> (T, B, d): all-gather along the sequence (dim 0)."""
    t = dist.get_world_size(group)
    out = torch.empty((x.shape[0] * t, *x.shape[1:]), dtype=x.dtype, device=x.device)
    dist.all_gather_into_tensor(out, x.contiguous(), group=group)
    return out


def _scatter_seq(x: torch.Tensor, group) -> torch.Tensor:
    """(T, B, d) partial sums on each rank -> (T/t, B, d) of the sum: reduce-scatter along the sequence."""
    t = dist.get_world_size(group)
    out = torch.empty((x.shape[0] // t, *x.shape[1:]), dtype=x.dtype, device=x.device)
    dist.reduce_scatter_tensor(out, x.contiguous(), group=group)
    return out


class _ScatterToSequence(torch.autograd.Function):
    """SP's reduce-scatter after a row-parallel layer; its backward all-gathers the gradient."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return _scatter_seq(x, group)

    @staticmethod
    def backward(ctx, grad):
        return _gather_seq(grad, ctx.group), None


class _GatherLinear(torch.autograd.Function):
    """SP's column-parallel linear: all-gather the (T/t, B, d) input along the sequence, multiply; keep only the
    shard for backward and gather it again there (for the weight's gradient); reduce-scatter the input's gradient."""

    @staticmethod
    def forward(ctx, x, weight, bias, group):
        ctx.group, ctx.has_bias = group, bias is not None
        ctx.save_for_backward(x, weight)
        out = _gather_seq(x, group) @ weight.t()  # (T, B, out/t)
        return out if bias is None else out + bias

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        total = _gather_seq(x, ctx.group)  # (T, B, d) again
        grad_input = _scatter_seq(grad @ weight, ctx.group)  # (T/t, B, d) of the summed input gradient
        grad_weight = grad.reshape(-1, grad.shape[-1]).t() @ total.reshape(-1, total.shape[-1])
        grad_bias = grad.reshape(-1, grad.shape[-1]).sum(0) if ctx.has_bias else None
        return grad_input, grad_weight, grad_bias, None


class TensorParallelBlock(nn.Module):
    """This rank's part of `block` (a lecture2 TransformerBlock) under tensor parallelism over `group`; see the
    module's text. forward(x): x is (B, T, d) without SP (the same on every rank), (T/t, B, d) with SP (this
    rank's part of the sequence, sequence first as Megatron keeps it); the output has the input's layout."""

    def __init__(self, block: nn.Module, group=None, sequence_parallel: bool = False):
        super().__init__()
        self.group = group
        t, rank = dist.get_world_size(group), dist.get_rank(group)
        attn = block.attention
        d, H = attn.qkv.in_features, attn.n_heads
        d_ff = block.ffn.up.out_features
        if H % t or d % t or d_ff % t:
            raise ValueError(f"t={t} 要整除 n_heads={H}、d={d} 和 d_ff={d_ff}")
        self.t, self.rank, self.sp = t, rank, bool(sequence_parallel)
        self.local_heads, self.head_dim, self.causal, self.fused = H // t, attn.head_dim, attn.causal, attn.fused
        rows, cols, ff = column_rows(d, H, t, rank), shard_of(d, t, rank), shard_of(d_ff, t, rank)

        def linear(weight, bias):
            lin = nn.Linear(weight.shape[1], weight.shape[0], bias=bias is not None,
                            dtype=weight.dtype, device=weight.device)
            with torch.no_grad():
                lin.weight.copy_(weight)
                if bias is not None:
                    lin.bias.copy_(bias)
            return lin

        with torch.no_grad():
            self.qkv = linear(attn.qkv.weight[rows], None if attn.qkv.bias is None else attn.qkv.bias[rows])
            self.proj = linear(attn.proj.weight[:, cols], None)  # the bias is added after the reduction
            self.up = linear(block.ffn.up.weight[ff], None if block.ffn.up.bias is None else block.ffn.up.bias[ff])
            self.down = linear(block.ffn.down.weight[:, ff], None)
        self.proj_bias = None if attn.proj.bias is None else nn.Parameter(attn.proj.bias.detach().clone())
        self.down_bias = None if block.ffn.down.bias is None else nn.Parameter(block.ffn.down.bias.detach().clone())
        self.norm1, self.norm2 = _copy_module(block.norm1), _copy_module(block.norm2)

    # --- the two halves of the block, each between a "before" and an "after" collective
    def _column(self, x, layer: nn.Linear):
        """A column-parallel layer on this rank's input: whole x (B, T, d), or with SP its (T/t, B, d) part."""
        if self.t == 1:
            return layer(x)
        if self.sp:  # (T, B, out/t) -> (B, T, out/t), contiguous as the layers after it expect (no copy is saved)
            return _GatherLinear.apply(x, layer.weight, layer.bias, self.group).transpose(0, 1).contiguous()
        return layer(_CopyToParallel.apply(x, self.group))

    def _leave(self, y):
        if self.t == 1:
            return y
        return _ScatterToSequence.apply(y, self.group) if self.sp else _ReduceFromParallel.apply(y, self.group)

    def _attention(self, x):  # x: this rank's block input -> (B, T, d) partial sum over the ranks' heads
        qkv = self._column(x, self.qkv)  # (B, T, 3d/t)
        B, T, _ = qkv.shape
        h, hd = self.local_heads, self.head_dim
        q, k, v = qkv.split(h * hd, dim=-1)  # each (B, T, d/t)
        q, k, v = (z.view(B, T, h, hd).transpose(1, 2) for z in (q, k, v))  # (B, h, T, hd)
        if self.fused:
            out = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)  # (B, h, T, hd)
        else:  # explicit, as models.MultiHeadAttention writes it
            scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))  # (B, h, T, T)
            if self.causal:
                mask = torch.full((T, T), float("-inf"), device=x.device, dtype=scores.dtype).triu(1)
                scores = scores + mask
            out = F.softmax(scores, dim=-1) @ v  # (B, h, T, hd)
        return self.proj(out.transpose(1, 2).reshape(B, T, h * hd))  # (B, T, d) partial

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = self._attention(self.norm1(x))  # (B, T, d) partial
        y = self._leave(a.transpose(0, 1) if self.sp else a)  # with SP: (T/t, B, d), the sequence scattered again
        x = x + (y if self.proj_bias is None else y + self.proj_bias)
        u = self._column(self.norm2(x), self.up)  # (B, T, d_ff/t)
        z = self.down(F.gelu(u))  # (B, T, d) partial
        z = self._leave(z.transpose(0, 1) if self.sp else z)
        return x + (z if self.down_bias is None else z + self.down_bias)

    def replicated_parameters(self) -> list[nn.Parameter]:
        """The parameters every rank holds whole (norms, row-parallel biases): under SP their gradients are partial
        (each rank saw T/t of the sequence) and must be all-reduced."""
        out = list(self.norm1.parameters()) + list(self.norm2.parameters())
        return out + [b for b in (self.proj_bias, self.down_bias) if b is not None]

    def sync_replicated_grads(self) -> None:
        """SP only: sum the replicated parameters' partial gradients over the ranks, one all-reduce of them all."""
        if not self.sp or self.t == 1:
            return
        params = [p for p in self.replicated_parameters() if p.grad is not None]
        if not params:
            return
        flat = torch.cat([p.grad.reshape(-1) for p in params])
        dist.all_reduce(flat, group=self.group)
        offset = 0
        for p in params:
            p.grad.copy_(flat[offset:offset + p.numel()].view_as(p))
            offset += p.numel()


def _copy_module(module: nn.Module) -> nn.Module:
    import copy

    return copy.deepcopy(module)
