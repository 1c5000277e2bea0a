"""The two flat-tensor collectives under the names the running torch has.

torch 2.13 names them `reduce_scatter_single` and `all_gather_single` and deprecates `reduce_scatter_tensor` and
`all_gather_into_tensor`; torch 2.12 and older have only the old names (a CUDA build a student installs, the lent
H200's torch 2.11). The function is looked up at each call, so that lecture2.distributed.counting's wrappers, which
replace torch.distributed's attributes, see it.

On the ground floor (it imports only torch.distributed, at the call), so that lecture2.zero reads it without pulling
in lecture2.distributed's process handling (subprocess, signals).
"""
from __future__ import annotations


def reduce_scatter_flat(output, input, group=None):
    """Sum `input` (world x output.numel() elements) over the group's ranks; rank r keeps the r-th slice in `output`."""
    import torch.distributed as dist

    fn = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
    return fn(output, input, group=group)


def all_gather_flat(output, input, group=None):
    """Concatenate every rank's `input` into `output` (world x input.numel() elements), in rank order."""
    import torch.distributed as dist

    fn = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
    return fn(output, input, group=group)
