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
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass

import torch

__all__ = ["StepBytes", "bitsandbytes_defaults", "held_bytes", "make_optimizer", "state_bytes", "step_bytes"]


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


# --- one real step of a recipe, then what it holds -------------------------------------------------------------

OPTIMIZERS = ("sgd", "sgd_momentum", "adagrad", "adam", "adafactor", "adam8bit")
PRECISIONS = ("fp32", "mixed", "bf16")
FP32_GRADS = ("none", "instead", "also")


@dataclass(frozen=True)
class StepBytes:
    """What one training step of a recipe leaves held until the next step, in bytes.

    `optimizer` is everything the optimizer keeps for the update (its state tensors and any fp32 master weights)
    except the step counters, which are `counters` apart: torch.optim's Adam, Adagrad and Adafactor keep one fp32 scalar
    tensor per parameter tensor (4 bytes each, a library's bookkeeping, not a copy of the parameters);
    bitsandbytes counts its steps in a Python int (0 bytes)."""

    recipe: str
    n_params: int
    n_tensors: int
    params: int
    grads: int
    optimizer: int
    counters: int

    @property
    def total(self) -> int:
        """params + grads + optimizer (bytes), the step counters left out."""
        return self.params + self.grads + self.optimizer

    def per_param(self) -> dict[str, float]:
        """Bytes per parameter: params, grads, optimizer and their total."""
        parts = {"params": self.params, "grads": self.grads, "optimizer": self.optimizer, "total": self.total}
        return {name: nbytes / self.n_params for name, nbytes in parts.items()}

    def __str__(self) -> str:
        per = self.per_param()
        return (f"{self.recipe}: N = {self.n_params:,} in {self.n_tensors} tensors -> params {per['params']:.3g} + "
                f"grads {per['grads']:.3g} + optimizer {per['optimizer']:.4g} = {per['total']:.4g} bytes/param "
                f"(+ step counters {self.counters} B)")


def _bitsandbytes():
    """bitsandbytes, imported quietly: on CPUs with AVX-512 BF16 it logs that an optional 4-bit kernel is missing
    (unused here)."""
    import logging

    logging.getLogger("bitsandbytes").setLevel(logging.ERROR)
    import bitsandbytes

    return bitsandbytes


@contextmanager
def bitsandbytes_defaults():
    """bitsandbytes' global optimizer manager emptied, restored afterwards. A `bnb.nn.StableEmbedding` registers
    an override there (32-bit state for its weight) that the manager keeps by position (group 0, parameter 0) and
    applies to the first parameter of every 8-bit optimizer stepped later: inside this block nothing registered
    elsewhere applies, and nothing registered inside leaks out."""
    manager = _bitsandbytes().optim.GlobalOptimManager.get_instance()
    saved = dict(vars(manager))
    manager.initialize()
    try:
        yield
    finally:
        vars(manager).clear()
        vars(manager).update(saved)


def make_optimizer(name: str, params: list) -> torch.optim.Optimizer:
    """One of OPTIMIZERS over `params`, with the settings the notebooks use (bitsandbytes: its defaults)."""
    if name in ("sgd", "sgd_momentum"):
        return torch.optim.SGD(params, lr=0.1, momentum=0.9 if name == "sgd_momentum" else 0.0)
    if name == "adagrad":  # CS336 lecture 2's example: one running sum of squared gradients per parameter
        return torch.optim.Adagrad(params, lr=1e-2)
    if name == "adam":
        return torch.optim.Adam(params, lr=1e-3)
    if name == "adafactor":
        return torch.optim.Adafactor(params, lr=1e-2)
    if name == "adam8bit":
        return _bitsandbytes().optim.Adam8bit(params, lr=1e-3)  # blocks of 256, min_8bit_size=4096
    raise ValueError(f"optimizer 应是 {', '.join(OPTIMIZERS)} 之一, 得到 {name!r}")


def _counter_bytes(optimizer: torch.optim.Optimizer) -> int:
    return held_bytes(state["step"] for state in optimizer.state.values()
                      if isinstance(state.get("step"), torch.Tensor))


def step_bytes(optimizer: str = "adam", precision: str = "fp32", d_model: int = 64, n_heads: int = 4,
               seed: int = 0, fp32_grads: str = "none") -> StepBytes:
    """One real training step of a recipe on a `models.TransformerBlock(d_model, n_heads)` (on the CPU), then the
    bytes held until the next step (`state_bytes`, the step counters apart).

    `optimizer`: one of OPTIMIZERS. `precision`: "fp32" (an fp32 model, the optimizer on its parameters), "bf16"
    (a pure bf16 model, no master copy) or "mixed" (the lecture's recipe: a bf16 model computes forward and
    backward; the optimizer updates an fp32 master copy of the weights from an fp32 copy of the bf16 gradients,
    then the master is rounded back into the model). `fp32_grads` (mixed only) is what happens to that fp32
    gradient copy: "none" freed after the step (the lecture's 16 bytes/param with Adam), "instead" kept in place
    of the bf16 gradient (18), "also" kept beside it (20)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision 应是 {', '.join(PRECISIONS)} 之一, 得到 {precision!r}")
    if fp32_grads not in FP32_GRADS or (fp32_grads != "none" and precision != "mixed"):
        raise ValueError(f"fp32_grads 应是 {', '.join(FP32_GRADS)} 之一 (不是 'none' 时只用于 precision='mixed'), "
                         f"得到 {fp32_grads!r}")
    from . import models

    torch.manual_seed(seed)
    dtype = torch.float32 if precision == "fp32" else torch.bfloat16
    model = models.TransformerBlock(d_model, n_heads).to(dtype)
    params = list(model.parameters())
    master = [p.detach().float() for p in params] if precision == "mixed" else []
    with bitsandbytes_defaults() if optimizer == "adam8bit" else nullcontext():
        opt = make_optimizer(optimizer, master or params)
        model(torch.randn(2, 8, d_model, dtype=dtype)).float().pow(2).mean().backward()
        for m, p in zip(master, params):
            m.grad = p.grad.float()  # the optimizer updates fp32 weights from fp32 gradients
            if fp32_grads == "instead":
                p.grad = None
        opt.step()
    with torch.no_grad():
        for m, p in zip(master, params):
            p.copy_(m)  # the updated master weights, rounded to bf16 for the next forward
            if fp32_grads == "none":
                m.grad = None
    held = state_bytes(params, opt, master)
    counters = _counter_bytes(opt)
    label = f"{precision} {optimizer}" + (f", fp32 grads {fp32_grads}" if fp32_grads != "none" else "")
    return StepBytes(label, sum(p.numel() for p in params), len(params), held["params"], held["grads"],
                     held["optimizer"] - counters, counters)
