"""The "tp" job in a rank: one TransformerBlock of the job's model shape split Megatron-style over the group
(lecture2.parallel.TensorParallelBlock, optionally sequence parallel), one forward + backward beside the whole block
run on every rank: the errors, the parameters each rank holds, the collectives it issues, the bytes saved for backward.

Runs inside a rank (lecture2.distributed.worker). Units: bytes.
"""
from __future__ import annotations

from . import counting, memory


def run_tp(job, group, device, backend: str) -> dict:
    """One forward + backward of a TransformerBlock split over the group (lecture2.parallel), beside the whole block."""
    import torch
    import torch.distributed as dist

    from .. import measure, models, parallel
    from ..zero import RECIPES as zero_recipes

    rank, world = dist.get_rank(group), dist.get_world_size(group)
    config = models.GPTConfig(**job.model)
    dtype = zero_recipes[job.recipe][0]
    torch.manual_seed(job.seed)  # the same whole block on every rank
    block = models.TransformerBlock(config.d_model, config.n_head, config.d_ff, config.bias, config.norm,
                                    config.fused_attention).to(device=device, dtype=dtype)
    tp = parallel.TensorParallelBlock(block, group, sequence_parallel=job.sequence_parallel)
    gen = torch.Generator().manual_seed(1000 + job.seed)  # the same input and output gradient on every rank
    x = torch.randn(job.batch, job.seq, config.d_model, generator=gen).to(device=device, dtype=dtype)  # (B, T, d)
    g = torch.randn(job.batch, job.seq, config.d_model, generator=gen).to(device=device, dtype=dtype)  # (B, T, d)

    def local(z):  # this rank's input in the block's layout: all of it, or (SP) its part of the sequence
        if not job.sequence_parallel:
            return z
        part = job.seq // world
        return z.transpose(0, 1)[rank * part:(rank + 1) * part].contiguous()  # (T/t, B, d)

    # backward from the scalar <output, g> rather than output.backward(g): the same gradients, and a first
    # Tensor.backward(gradient) costs a third of a second of one-time setup in every fresh process
    ref_in = x.clone().requires_grad_(True)
    ref_out = block(ref_in)
    (ref_out * g).sum().backward()
    tp_in = local(x).clone().requires_grad_(True)
    for _ in range(job.steps - 1):  # warm-up steps (gloo's first calls set up their buffers)
        (tp(local(x)) * local(g)).sum().backward()
        for q in tp.parameters():
            q.grad = None
    dist.barrier(group=group)
    log = counting.log()
    log.start()
    out = tp(tp_in)
    (out * local(g)).sum().backward()
    tp.sync_replicated_grads()
    calls = log.stop()

    def error(a, b) -> float:
        return float((a.float() - b.float()).abs().max()) if a.numel() else 0.0

    errors = {"output": error(out, local(ref_out.detach())), "input_grad": error(tp_in.grad, local(ref_in.grad))}
    d, ff = config.d_model, tp.up.out_features
    whole = {"qkv": block.attention.qkv.weight.grad[parallel.column_rows(d, config.n_head, world, rank)],
             "proj": block.attention.proj.weight.grad[:, parallel.shard_of(d, world, rank)],
             "up": block.ffn.up.weight.grad[rank * ff:(rank + 1) * ff],
             "down": block.ffn.down.weight.grad[:, rank * ff:(rank + 1) * ff],
             "norm1": block.norm1.weight.grad, "norm2": block.norm2.weight.grad}
    mine = {"qkv": tp.qkv.weight.grad, "proj": tp.proj.weight.grad, "up": tp.up.weight.grad,
            "down": tp.down.weight.grad, "norm1": tp.norm1.weight.grad, "norm2": tp.norm2.weight.grad}
    errors["weight_grads"] = max(error(mine[k], whole[k]) for k in whole)
    saved = measure.saved_bytes(lambda: tp(local(x).requires_grad_(True)), exclude=tp.parameters())
    whole_saved = measure.saved_bytes(lambda: block(x.clone().requires_grad_(True)), exclude=block.parameters())
    params = list(dict.fromkeys(tp.parameters()))
    report = {"rank": rank, "world": world, "collectives": calls, "errors": errors,
              "held": {"params": memory.held({"params": params})["params"]},
              "n_params": sum(q.numel() for q in params),
              "block_params": sum(q.numel() for q in block.parameters()),
              "replicated_params": sum(q.numel() for q in tp.replicated_parameters()),
              "saved_bytes": saved, "block_saved_bytes": whole_saved, "dtype": str(dtype).removeprefix("torch.")}
    dist.barrier(group=group)
    return report
