"""Plan a training run on a cluster: memory per GPU, communication by kind and NCCL algorithm, the step as a sum of
named parts, MFU, HFU, days and dollars; search the layouts for the fastest that fit.

    from lecture2 import planner
    p = planner.plan(planner.model("lecture-7b"), planner.Run(gpus=256), planner.Layout(zero=3))
    print(p.report())
    best = planner.search(planner.model("llama3-405b"), planner.Run(gpus=16384, seq_len=8192,
                                                                    batch_tokens=16 * 2**20))
    print(best[0].line())

The model lives in lecture2.planning, one module per part (shapes, layout, compute, collectives, schedule, memory,
costs, step, plan, search, conventions, published, reached); docs/planning.md states every formula, its source, and
the conformance table of published runs it is held to, and how far that lets you trust a plan. This module gathers
the names a plan needs (notebook 11, the CLI and the tests use it); notebook 11 also reads two parts directly:
lecture2.planning.collectives (the NCCL model beside lecture2.network's) and lecture2.planning.published (the runs).
"""
from __future__ import annotations

from dataclasses import replace

from . import estimate
from .planning import published
from .planning.layout import Layout, Run
from .planning.plan import Plan
from .planning.schedule import bubble_fraction, in_flight_chunks, in_flight_layers, simulate, stage_layers
from .planning.search import Ranked, layouts, search, tied
from .planning.shapes import MODELS, ConfigReport, ModelShape, from_config, model, with_params
from .planning.step import plan

__all__ = ["MODELS", "ConfigReport", "Layout", "ModelShape", "Plan", "Ranked", "Run", "bubble_fraction",
           "conformance", "from_config", "in_flight_chunks", "in_flight_layers", "layouts", "model", "plan",
           "search", "simulate", "stage_layers", "tied", "with_layout", "with_params", "zero3_model_states_bytes"]

conformance = published.conformance


def with_layout(p: Plan, **changes) -> Plan:
    """The same run with some of the layout changed (e.g. `with_layout(p, zero=1)`)."""
    return plan(p.model, p.run, replace(p.layout, **changes))


def zero3_model_states_bytes(n_params: float, largest_layer_params: float, n_gpus: int,
                             offload: str = "none") -> float:
    """Bytes per GPU of ZeRO-3's model states as DeepSpeed's `estimate_zero3_model_states_mem_needs` counts them
    (deepspeed/runtime/zero/stage3.py): 18 bytes per parameter sharded over the GPUs (2 fp16 weights + 16 for the
    fp32 master, m, v and gradient: MEMORY_RECIPES' "bf16 mixed Adam, fp32 grads" 2 + 4 + 12) plus the largest
    layer gathered whole, 4 bytes per parameter (its fp16 weights and gradient).

    offload: "none"; "optimizer" (the fp32 states and gradients live on the CPU, the GPU keeps 2N/n of weights);
    "all" (the weights too: only the gathered layer stays)."""
    if offload not in ("none", "optimizer", "all"):
        raise ValueError(f"offload 应是 'none', 'optimizer' 或 'all', 得到 {offload!r}")
    r = estimate.MEMORY_RECIPES["bf16 mixed Adam, fp32 grads"]
    gathered = 4 * largest_layer_params
    sharded = {"none": r.bytes_per_param, "optimizer": r.weights, "all": 0}[offload]
    return gathered + int(sharded * n_params / n_gpus)
