"""Recomputation strategies for one TransformerBlock, side by side: what each keeps for backward and what it
recomputes (notebook 07's optional section on selective activation recomputation).

Four ways to run a block's forward for training:
    no checkpoint      autograd keeps every saved tensor
    full checkpoint    `torch.utils.checkpoint` (non-reentrant): keeps the input, recomputes the forward in backward
    keep matmuls       selective checkpointing (PyTorch's `create_selective_checkpoint_contexts`) whose policy caches
                       the outputs of the Linear layers' matmuls (`aten.mm`) and recomputes everything else: the
                       example of PyTorch's documentation
    recompute core     Korthikanti et al. 2022, section 5: recompute the attention core (q k^T, scale, mask, softmax,
                       weights @ v), cache what the rest of the block computes

`compare` measures each: the bytes left alive for backward (`measure.kept_bytes`, which sees selective
checkpointing's cache too) and the FLOPs of a training step (`measure.count_flops`); it checks that every strategy
gives the plain block's gradients. Units: bytes, FLOPs.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch.utils.checkpoint import CheckpointPolicy, checkpoint, create_selective_checkpoint_contexts

from . import measure
from .models import TransformerBlock

__all__ = ["STRATEGIES", "Strategy", "compare"]

STRATEGIES = ("no checkpoint", "full checkpoint", "keep matmuls", "recompute core")
_aten = torch.ops.aten
# outside the attention core, what the recompute-core policy caches: matmuls, RMSNorm's rsqrt and products, GELU,
# residual adds (views are free; RMSNorm's mean, which it changes in place, is recomputed)
_KEPT_OUTSIDE_CORE = {_aten.mm.default, _aten.rsqrt.default, _aten.mul.Tensor, _aten.gelu.default, _aten.add.Tensor}


@dataclass(frozen=True)
class Strategy:
    """One strategy measured on one block and input: bytes kept for backward, and FLOPs of a training step
    (`step_flops`) and above the plain block's (`extra_flops`)."""

    name: str
    kept_bytes: int
    step_flops: int
    extra_flops: int


def _keep_matmuls(ctx, op, *args, **kwargs):
    return CheckpointPolicy.MUST_SAVE if op is _aten.mm.default else CheckpointPolicy.PREFER_RECOMPUTE


def _core_policy(block: TransformerBlock) -> tuple[Callable, list]:
    """A policy that recomputes the ops between the qkv projection's output and the output projection's input,
    and the hooks that tell it where the forward is (remove them after use)."""
    in_core = [False]
    hooks = [block.attention.qkv.register_forward_hook(lambda m, i, o: in_core.__setitem__(0, True)),
             block.attention.proj.register_forward_pre_hook(lambda m, i: in_core.__setitem__(0, False))]

    def policy(ctx, op, *args, **kwargs):
        keep = op in _KEPT_OUTSIDE_CORE and not in_core[0]
        return CheckpointPolicy.MUST_SAVE if keep else CheckpointPolicy.PREFER_RECOMPUTE

    return policy, hooks


def _checkpointed(block: TransformerBlock, policy=None) -> Callable:
    extra = {} if policy is None else {"context_fn": functools.partial(create_selective_checkpoint_contexts, policy)}
    return lambda z: checkpoint(block, z, use_reentrant=False, **extra)


def compare(block: TransformerBlock, inp: torch.Tensor) -> dict[str, Strategy]:
    """Each of STRATEGIES run on `block` (explicit attention) with input `inp` (requires grad): what it keeps for
    backward and the FLOPs of forward + backward of `square().mean()`, asserting the plain block's gradients."""
    if not isinstance(block, TransformerBlock) or block.attention.fused:
        raise ValueError("compare 需要一个显式 attention 的 models.TransformerBlock (fused_attention=False)")
    if not inp.requires_grad:
        raise ValueError("inp 要 requires_grad=True：在一个多层模型里，每一层的输入都需要梯度")
    params = list(block.parameters())
    core_policy, hooks = _core_policy(block)
    runs = dict(zip(STRATEGIES, [block, _checkpointed(block), _checkpointed(block, _keep_matmuls),
                                 _checkpointed(block, core_policy)]))
    found, reference, plain_flops = {}, None, 0
    try:
        for name, run in runs.items():
            inp.grad = None
            block.zero_grad(set_to_none=True)
            flops = measure.count_flops(lambda: run(inp).square().mean().backward())
            grads = [inp.grad] + [p.grad for p in params]
            if reference is None:
                reference, plain_flops = grads, flops
            elif not all(torch.allclose(g, r, rtol=1e-5, atol=1e-7) for g, r in zip(grads, reference)):
                raise AssertionError(f"{name}: gradients differ from the plain block's")
            found[name] = Strategy(name, measure.kept_bytes(run, inp, exclude=params), flops, flops - plain_flops)
    finally:
        for hook in hooks:
            hook.remove()
        inp.grad = None
        block.zero_grad(set_to_none=True)
    return found
