"""lecture2: instruments, hardware tables, checks and plots for Lecture 2 — PyTorch and compute accounting.

Modules, one job each:
    hardware  dense peak FLOP/s by GPU and dtype, memory, device detection, the CPU's measured peak
    measure   FLOPs of a callable, bytes saved (or kept) for backward, peak CUDA memory, benchmark and paired timing
    models    the small MLP, the pre-norm TransformerBlock and the GPT stack the notebooks measure
    training_state  bytes a model and its optimizer hold right now (params, grads, optimizer states), and what one
              real step of a recipe (optimizer x precision) leaves held
    recompute the recomputation strategies of one block side by side (checkpointing, selective checkpointing)
    data      a token file on disk read through a counter (the bytes a get_batch reads, notebook 04)
    estimate  the accounting calculator's arithmetic (FLOPs, time, cost, memory recipes of a training run)
    checks    comparisons and mistake hints (by key) for the notebooks' test cells
    answers   the one seam between a check and a student's answer: call, observe, session (plain data both ways)
    wire      the plain data that crosses that seam, and its strict decoder
    exercises the check cases of each notebook's exercises, and the instruments that run beside an answer
    fmt       bytes, FLOPs and seconds for people
    plots     the figures the notebooks share
    profile   a device profile (matmul FLOP/s, bandwidth, predictions vs measurements) and the shipped ones
    reference the shipped profiles beside the student's own run (notebooks 01, 05-08): tables and plots
    distributed  a live torch.distributed process group started from a notebook (notebooks 10 and 11): bytes held
              and collectives issued per rank under DDP, ZeroRedundancyOptimizer, FSDP2 and lecture2.zero
              (a package: the records, the group, warm groups, the rank's worker and what it measures)
    zero      the paper's ZeRO stages 0-3 written out on flat buffers (run by lecture2.distributed's workers)
    parallel  Megatron-style tensor parallelism of the course's block (column/row-parallel layers)
    network   ring collectives at the measured bus bandwidth within and across nodes, latency; the α-β fit
    planner   a training run planned on a cluster (TP, CP, PP, DP with ZeRO, EP, FP8): memory, the step as named
              parts from measured kernel and NCCL figures, MFU, HFU; the search; published runs beside it
    planning  the planner's parts: shapes (config.json), compute, collectives, schedule, memory, costs, step, search
    cli       `python -m lecture2 ...` (cli_estimate: the estimate command)
    editions  the course's editions (Chinese, English) and which one a notebook is; messages and hints_en: what
              lecture2 says, in each edition's language; lab: a failed check shown in the notebook's language

Every module is imported on first use (`from lecture2 import checks`, or `lecture2.hardware`): `import lecture2`
imports no torch, so that the grader's own process, the student's process before its first cell and
`python -m lecture2.distributed.worker` (a rank) start clean and fast.
"""
from __future__ import annotations

import importlib
import os

__all__ = ["checks", "estimate", "fmt", "hardware", "measure", "models", "training_state"]
__version__ = "0.1.0"


def __getattr__(name: str):
    """`lecture2.<module>`, imported when first asked for."""
    if name in __all__:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if os.environ.get("JPY_SESSION_NAME"):  # a Jupyter kernel: failed checks in its notebook's language (lecture2.lab)
    from . import lab as _lab

    _lab.install()
