"""Counting instruments: FLOPs of a callable (PyTorch's FLOP counter, the CPU attention kernel added), the tensors
and bytes autograd saves for backward, the bytes a forward leaves alive, and the CUDA allocator's peak (bytes)."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch
from torch.utils import flop_counter
from torch.utils.flop_counter import FlopCounterMode

from .timing import _check_callable

# PyTorch's FLOP counter registers the CUDA attention kernels but not the CPU one that
# scaled_dot_product_attention dispatches to, so on CPU it would count attention as 0 FLOPs.
# These formulas are the counter's own (sdpa_flop_count), applied to the CPU ops.
def _cpu_sdpa_forward(query, key, value, *args, out_shape=None, **kwargs) -> int:
    return flop_counter.sdpa_flop_count(query, key, value)


def _cpu_sdpa_backward(grad_out, query, key, value, *args, out_shape=None, **kwargs) -> int:
    return flop_counter.sdpa_backward_flop_count(grad_out, query, key, value)


_EXTRA_FLOP_RULES = {}
if hasattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu"):
    _EXTRA_FLOP_RULES[torch.ops.aten._scaled_dot_product_flash_attention_for_cpu] = _cpu_sdpa_forward
    _EXTRA_FLOP_RULES[torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward] = _cpu_sdpa_backward


def _flop_mode() -> FlopCounterMode:
    # custom_mapping wraps each rule so that it receives shapes, as the counter's own rules do
    return FlopCounterMode(display=False, custom_mapping=dict(_EXTRA_FLOP_RULES))


def count_flops(fn: Callable, *args, **kwargs) -> int:
    """FLOPs that `fn(*args, **kwargs)` performs, as PyTorch's FLOP counter sees them.

    Counts matmuls, convolutions and attention (the CPU attention kernel included); elementwise ops,
    norms and softmax count 0, as in the counter. Whatever backward `fn` runs is counted too.
    """
    return sum(flop_breakdown(fn, *args, **kwargs).values())


def flop_breakdown(fn: Callable, *args, **kwargs) -> dict[str, int]:
    """FLOPs of `fn(*args, **kwargs)` by aten op name (e.g. {"mm": 1024, "bmm": 512})."""
    _check_callable(fn)
    mode = _flop_mode()
    with mode:
        fn(*args, **kwargs)
    counts = mode.get_flop_counts().get("Global", {})
    return {getattr(op, "__name__", str(op)).split(".")[0]: int(n) for op, n in counts.items()}


@dataclass(frozen=True)
class SavedTensor:
    """One storage autograd keeps for backward: its shape, dtype and size in bytes."""

    shape: tuple[int, ...]
    dtype: torch.dtype
    nbytes: int


def _storage_key(t: torch.Tensor) -> tuple:
    storage = t.untyped_storage()
    return (t.device.type, t.device.index, storage.data_ptr())


def saved_tensors(fn: Callable, *args, exclude: Iterable[torch.Tensor] = (), **kwargs) -> list[SavedTensor]:
    """The storages autograd saves while `fn(*args, **kwargs)` builds its graph, one entry per storage.

    Deduplicated by storage (a tensor saved by two ops, or a view of a saved tensor, counts once) and
    parameters excluded: pass `exclude=model.parameters()` (they are held anyway, graph or not). Pass
    `fn` that runs the forward only; the graph it builds is dropped when this returns.
    """
    _check_callable(fn)
    skip = {_storage_key(p) for p in exclude}
    found: dict[tuple, SavedTensor] = {}
    keep_alive = []  # hold every packed tensor so no storage address is reused during the call

    def pack(t: torch.Tensor):
        keep_alive.append(t)
        key = _storage_key(t)
        if key not in skip and key not in found and t.device.type != "meta":
            storage = t.untyped_storage()
            found[key] = SavedTensor(tuple(t.shape), t.dtype, storage.nbytes())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn(*args, **kwargs)
    del out, keep_alive
    return list(found.values())


def saved_bytes(fn: Callable, *args, exclude: Iterable[torch.Tensor] = (), **kwargs) -> int:
    """Bytes autograd keeps for backward while `fn` runs: see `saved_tensors` (deduplicated, params excluded)."""
    return sum(t.nbytes for t in saved_tensors(fn, *args, exclude=exclude, **kwargs))


def block_saved_bytes(B: int, T: int, d_model: int, n_heads: int, dtype: torch.dtype = torch.float32,
                      fused_attention: bool = False, seed: int = 0) -> int:
    """Bytes autograd saves for backward in one fresh `models.TransformerBlock(d_model, n_heads)` (explicit or
    fused attention, in `dtype`, on the CPU) run on an input (B, T, d_model) that requires grad, as every layer's
    input in a stack does: `saved_bytes`, the block's parameters excluded."""
    from ..models import TransformerBlock

    torch.manual_seed(seed)
    block = TransformerBlock(d_model, n_heads, fused_attention=fused_attention).to(dtype)
    x = torch.randn(B, T, d_model, dtype=dtype, requires_grad=True)
    return saved_bytes(lambda: block(x), exclude=block.parameters())


def peak_memory(fn: Callable, *args, device: str | torch.device = "cuda", **kwargs) -> int:
    """Peak bytes the CUDA caching allocator held above what was allocated before `fn` ran.

    CUDA only: on CPU PyTorch keeps no allocator statistics; use `saved_bytes` there.
    """
    _check_callable(fn)
    device = torch.device(device)
    if device.type != "cuda":
        raise ValueError("peak_memory 需要 CUDA (allocator statistics exist only on CUDA); on CPU use saved_bytes")
    if not torch.cuda.is_available():
        raise RuntimeError("没有可用的 CUDA 设备 (no CUDA device available)")
    torch.cuda.synchronize(device)
    before = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    fn(*args, **kwargs)
    torch.cuda.synchronize(device)
    return torch.cuda.max_memory_allocated(device) - before


def kept_bytes(fn: Callable, inp: torch.Tensor, exclude: Iterable[torch.Tensor] = ()) -> int:
    """Bytes the forward `fn(inp)` leaves alive for backward, whoever keeps them: autograd's saved tensors, a
    checkpoint's inputs, or selective checkpointing's cache of chosen outputs (which `saved_bytes` cannot see).

    Counted as: the input's storage, plus every storage an op made during the call (seen by a TorchDispatchMode,
    held only by weak references, so it keeps nothing alive) that is still alive when `fn` returns, its output
    and the `exclude`d tensors (the parameters) left out."""
    from torch.multiprocessing.reductions import StorageWeakRef
    from torch.utils._python_dispatch import TorchDispatchMode

    _check_callable(fn)

    class _MadeStorages(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.made: dict[int, tuple[StorageWeakRef, int]] = {}

        def __torch_dispatch__(self, op, types, args=(), kwargs=None):
            out = op(*args, **(kwargs or {}))
            for t in out if isinstance(out, (tuple, list)) else [out]:
                if isinstance(t, torch.Tensor):
                    storage = t.untyped_storage()
                    self.made[storage.data_ptr()] = (StorageWeakRef(storage), storage.nbytes())  # the latest here
            return out

    skip = {p.untyped_storage().data_ptr() for p in exclude}
    with _MadeStorages() as mode:
        out = fn(inp)
    skip.add(out.untyped_storage().data_ptr())
    alive = sum(n for ptr, (ref, n) in mode.made.items() if ptr not in skip and not ref.expired())
    return inp.untyped_storage().nbytes() + alive
