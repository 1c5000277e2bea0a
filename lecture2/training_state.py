"""What a training run holds between steps: the bytes of parameters, gradients and optimizer states.

An instrument, not a formula: it walks the live tensors (a model's parameters and their `.grad`, an
optimizer's `state`, any fp32 master copy) and adds up the bytes of their storages, each storage once.
Units: bytes.

Grouping follows the lecture (§4.1): "params" are the weights the model computes with, "grads" every
gradient tensor held (the model's `.grad` and any master copy's `.grad`), "optimizer" everything the
optimizer keeps for the update (its `state` tensors, e.g. Adam's exp_avg, exp_avg_sq and step counter,
plus the fp32 master weights of mixed precision).

Optimizers that quantize their state keep it in other dtypes or in tensor subclasses: bitsandbytes'
8-bit Adam holds uint8 tensors plus fp32 block scales (plain tensors, counted as they are); torchao's
low-bit optimizers wrap theirs in a tensor subclass whose bytes live in inner tensors (`__tensor_flatten__`),
and those inner tensors are what is counted.
"""
from __future__ import annotations

from collections.abc import Iterable

import torch

__all__ = ["held_bytes", "state_bytes"]


def _storage_key(t: torch.Tensor) -> tuple:
    return (t.device.type, t.device.index, t.untyped_storage().data_ptr())


def _plain_tensors(t: torch.Tensor) -> list[torch.Tensor]:
    """`t` itself, or for a wrapper tensor subclass (no storage of its own) the inner tensors that hold its bytes."""
    if not hasattr(type(t), "__tensor_flatten__"):
        return [t]
    names, _ = t.__tensor_flatten__()
    return [inner for name in names for inner in _plain_tensors(getattr(t, name))]


def held_bytes(tensors: Iterable[torch.Tensor | None]) -> int:
    """Bytes of the storages behind `tensors`, each storage counted once (views share theirs); None skipped."""
    found: dict[tuple, int] = {}
    for t in _flatten(tensors):
        if t.device.type != "meta":
            found[_storage_key(t)] = t.untyped_storage().nbytes()
    return sum(found.values())


def _flatten(tensors: Iterable[torch.Tensor | None]) -> list[torch.Tensor]:
    plain = []
    for t in tensors:
        if t is None:
            continue
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"需要 Tensor 或 None, 得到 {type(t).__name__}")
        plain += _plain_tensors(t)
    return plain


def _optimizer_tensors(optimizer: torch.optim.Optimizer) -> list[torch.Tensor]:
    return [v for per_param in optimizer.state.values() for v in per_param.values() if isinstance(v, torch.Tensor)]


def state_bytes(params: Iterable[torch.Tensor], optimizer: torch.optim.Optimizer,
                master_params: Iterable[torch.Tensor] = ()) -> dict[str, int]:
    """Bytes held now by a training run, as {"params": ..., "grads": ..., "optimizer": ...}.

    `params`: the model's parameters (e.g. `model.parameters()`); `optimizer`: the optimizer after at
    least one step (its state is created lazily by the first `step()`); `master_params`: fp32 copies the
    optimizer updates in mixed precision (counted under "optimizer"; their `.grad`, if kept, under "grads").
    A tensor shared by two groups is counted in the first group only.
    """
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"optimizer 应是 torch.optim.Optimizer, 得到 {type(optimizer).__name__}")
    params, master = list(params), list(master_params)
    groups = {
        "params": params,
        "grads": [p.grad for p in params] + [m.grad for m in master],
        "optimizer": _optimizer_tensors(optimizer) + master,
    }
    seen: set[tuple] = set()
    result = {}
    for name, tensors in groups.items():
        fresh = [t for t in _flatten(tensors) if _storage_key(t) not in seen]
        result[name] = held_bytes(fresh)
        seen |= {_storage_key(t) for t in fresh}
    return result
