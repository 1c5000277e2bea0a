"""The "tp" job in a rank: one TransformerBlock of the job's model shape split Megatron-style over the group
(lecture2.parallel.TensorParallelBlock, optionally sequence parallel), one forward + backward beside the whole block
run on every rank: the errors, the parameters each rank holds, the collectives it issues, the bytes saved for backward.

Runs inside a rank (lecture2.distributed.worker). Units: bytes.
"""
from __future__ import annotations

from . import counting, memory


def run_tp(job, group, device, backend: str) -> dict:
    """One forward + backward of a TransformerBlock split over the group (lecture2.parallel), beside the whole block."""
    import torch.distributed as dist

    from .. import models
    from ..zero import RECIPES as zero_recipes

    rank, world = dist.get_rank(group), dist.get_world_size(group)
    config = models.GPTConfig(**job.model)
    dtype = zero_recipes[job.recipe][0]
    block, tp, x, g = _blocks_and_data(job, group, device, config, dtype)
    local = _local_view(job, rank, world)
    # backward from the scalar <output, g> rather than output.backward(g): the same gradients, and a first
    # Tensor.backward(gradient) costs a third of a second of one-time setup in every fresh process
    ref_in = x.clone().requires_grad_(True)
    ref_out = block(ref_in)
    (ref_out * g).sum().backward()
    tp_in = local(x).clone().requires_grad_(True)
    _warm_up(job, tp, x, g, local)
    dist.barrier(group=group)
    log = counting.log()
    log.start()
    out = tp(tp_in)
    (out * local(g)).sum().backward()
    tp.sync_replicated_grads()
    calls = log.stop()
    errors = {"output": _error(out, local(ref_out.detach())), "input_grad": _error(tp_in.grad, local(ref_in.grad))}
    errors["weight_grads"] = _weight_grad_error(config, block, tp, rank, world)
    report = _report(rank, world, calls, errors, block, tp, x, local, dtype)
    dist.barrier(group=group)
    return report


def _blocks_and_data(job, group, device, config, dtype):
    """The whole block (the same on every rank), its tensor-parallel split over the group, and the input x and the
    output gradient g, both (B, T, d) and the same on every rank; returns (block, tp, x, g)."""
    import torch

    from .. import models, parallel

    torch.manual_seed(job.seed)  # the same whole block on every rank
    block = models.TransformerBlock(config.d_model, config.n_head, config.d_ff, config.bias, config.norm,
                                    config.fused_attention).to(device=device, dtype=dtype)
    tp = parallel.TensorParallelBlock(block, group, sequence_parallel=job.sequence_parallel)
    gen = torch.Generator().manual_seed(1000 + job.seed)  # the same input and output gradient on every rank
    x = torch.randn(job.batch, job.seq, config.d_model, generator=gen).to(device=device, dtype=dtype)  # (B, T, d)
    g = torch.randn(job.batch, job.seq, config.d_model, generator=gen).to(device=device, dtype=dtype)  # (B, T, d)
    return block, tp, x, g


def _local_view(job, rank: int, world: int):
    """A function giving this rank's part of a (B, T, d) tensor in the block's layout: all of it, or with sequence
    parallelism its slice of the sequence, (T/t, B, d)."""
    def local(z):  # this rank's input in the block's layout: all of it, or (SP) its part of the sequence
        if not job.sequence_parallel:
            return z
        part = job.seq // world
        return z.transpose(0, 1)[rank * part:(rank + 1) * part].contiguous()  # (T/t, B, d)

    return local


def _warm_up(job, tp, x, g, local) -> None:
    """`job.steps - 1` unmeasured forward + backward passes of the split block, gradients dropped after each."""
    for _ in range(job.steps - 1):  # warm-up steps (gloo's first calls set up their buffers)
        (tp(local(x)) * local(g)).sum().backward()
        for q in tp.parameters():
            q.grad = None


def _error(a, b) -> float:
    """The largest absolute difference of two tensors (in fp32); 0 for empty ones."""
    return float((a.float() - b.float()).abs().max()) if a.numel() else 0.0


def _weight_grad_error(config, block, tp, rank: int, world: int) -> float:
    """The largest error of this rank's weight gradients against the same rows or columns of the whole block's."""
    from .. import parallel

    d, ff = config.d_model, tp.up.out_features
    whole = {"qkv": block.attention.qkv.weight.grad[parallel.column_rows(d, config.n_head, world, rank)],
             "proj": block.attention.proj.weight.grad[:, parallel.shard_of(d, world, rank)],
             "up": block.ffn.up.weight.grad[rank * ff:(rank + 1) * ff],
             "down": block.ffn.down.weight.grad[:, rank * ff:(rank + 1) * ff],
             "norm1": block.norm1.weight.grad, "norm2": block.norm2.weight.grad}
    mine = {"qkv": tp.qkv.weight.grad, "proj": tp.proj.weight.grad, "up": tp.up.weight.grad,
            "down": tp.down.weight.grad, "norm1": tp.norm1.weight.grad, "norm2": tp.norm2.weight.grad}
    return max(_error(mine[k], whole[k]) for k in whole)


def _report(rank: int, world: int, calls: list, errors: dict, block, tp, x, local, dtype) -> dict:
    """This rank's report: the collectives and errors, the parameters held (count and bytes), and the bytes saved
    for backward by the split block and by the whole block."""
    from .. import measure

    saved = measure.saved_bytes(lambda: tp(local(x).requires_grad_(True)), exclude=tp.parameters())
    whole_saved = measure.saved_bytes(lambda: block(x.clone().requires_grad_(True)), exclude=block.parameters())
    params = list(dict.fromkeys(tp.parameters()))
    return {"rank": rank, "world": world, "collectives": calls, "errors": errors,
            "held": {"params": memory.held({"params": params})["params"]},
            "n_params": sum(q.numel() for q in params),
            "block_params": sum(q.numel() for q in block.parameters()),
            "replicated_params": sum(q.numel() for q in tp.replicated_parameters()),
            "saved_bytes": saved, "block_saved_bytes": whole_saved, "dtype": str(dtype).removeprefix("torch.")}
