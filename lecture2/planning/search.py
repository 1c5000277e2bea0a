"""`search`: the layouts practitioners run for a model, GPU count and batch, ranked by the planned step time, each with
what it loses to the best.

Tried: TP 1/2/4/8 inside a node (with and without SP), every PP that splits the layers (evenly, Llama 3's one layer
fewer at both ends, or, for a model whose last stage also runs a large head and MTP modules, fewer layers there),
virtual stages 1 up to the layers of a stage, CP 2-32 for sequences of 16K and more, EP over the data-parallel ranks
for MoE models (with DualPipe where PP is even), ZeRO 0-3 and HSDP, micro-batches of 1-8 sequences, no / selective /
full recompute. A layout is timed only if it fits: memory grows with virtual stages and micro-batch size and falls
with recomputation, so most of the space is ruled out by a memory check before anything is timed.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from . import reached
from .layout import Layout, Run
from .plan import Plan
from .shapes import ModelShape, check_divisible
from .step import peak_memory, plan, usable_memory

__all__ = ["Ranked", "layouts", "search", "tied"]

_ZERO = ((0, False), (1, False), (2, False), (3, False), (3, True))
# (SP, TP overlap) tried with and without tensor parallelism: Megatron's default, and with SP Transformer Engine's
# userbuffers (--tp-comm-overlap)
_TP = {False: ((False, "megatron"),), True: ((False, "megatron"), (True, "megatron"), (True, "userbuffers"))}


@dataclass
class Ranked:
    """A plan in a search's ranking: how much slower its step is than the best, the part that makes it so, and
    whether it ties with the best (closer than the planner's median error on published runs, reached.TIE)."""

    plan: Plan
    loss: float  # step_s / best step_s - 1
    why: str
    tied: bool = False

    def line(self) -> str:
        if self.loss == 0:
            behind = "the fastest planned"
        elif self.tied:
            behind = f"+{self.loss:.1%}, a tie: within the planner's {reached.TIE:.1%} median error ({self.why})"
        else:
            behind = f"+{self.loss:.1%}: {self.why}"
        return f"{self.plan.summary()}  [{behind}]"


def _pipelines(shape: ModelShape, p: int) -> list[dict]:
    """The ways to split the layers over p stages the search tries."""
    L = shape.n_layers
    if p == 1:
        return [{}]
    out = []
    if L % p == 0:
        out.append({})
    if p > 2 and (L + 2) % p == 0:
        out.append({"fewer_layers_at_ends": 1})
    if not out and L >= p:
        out.append({})  # uneven: the earlier stages one layer more
    if shape.mtp_layers or shape.moe:  # a heavy last stage (head, MTP modules) takes fewer layers
        base = math.ceil(L / p)
        out += [{"last_stage_layers": k} for k in range(max(0, base - 3), base) if L - k >= p - 1]
    return out


def layouts(shape: ModelShape, run: Run):
    """Every layout `search` considers (before the memory check): see the module's text."""
    c = run.node
    seqs = run.sequences
    cps = [1] + ([k for k in (2, 4, 8, 16, 32) if run.seq_len // k >= 2048] if run.seq_len >= 16384 else [])
    for t in (1, 2, 4, 8):
        if t > c.gpus_per_node or run.gpus % t:
            continue
        try:
            check_divisible(shape, t)
        except ValueError:
            continue
        for cp in cps:
            for p in range(1, shape.n_layers + 1):
                if run.gpus % (t * cp * p):
                    continue
                d = run.gpus // (t * cp * p)
                if seqs % d:
                    continue
                eps = [1] if not shape.moe else [e for e in (1, 2, 4, 8, 16, 32, 64, 128, 256)
                                                 if (d * cp) % e == 0 and shape.n_experts % e == 0
                                                 and e * 32 >= shape.n_experts]  # at most 32 experts a GPU
                for split in _pipelines(shape, p):
                    for ep in eps:
                        schedules = ["1f1b"] + (["dualpipe"] if shape.moe and ep > 1 and p % 2 == 0 else [])
                        for b in (1, 2, 4, 8):
                            if (seqs // d) % b:
                                continue
                            for zero, hsdp in _ZERO:
                                for sp, overlap in _TP[t > 1]:
                                    for sched in schedules:
                                        yield Layout(tp=t, pp=p, zero=zero, sp=sp, micro_batch=b, hsdp=hsdp, cp=cp,
                                                     ep=ep, schedule=sched, comm_sms=20 if sched == "dualpipe" else 0,
                                                     tp_overlap=overlap, **split)


def _fits(shape, run, layout) -> Plan | None:
    """The plan of `layout` if it can exist and fits (its memory checked before anything is timed)."""
    try:
        if peak_memory(shape, run, layout) > usable_memory(run):
            return None
        return plan(shape, run, layout)
    except ValueError:
        return None


def _candidates(shape: ModelShape, run: Run):
    """Plans that fit: for each base layout, the recompute choices and virtual stages whose memory allows them."""
    for base in layouts(shape, run):
        if _fits(shape, run, replace(base, recompute="full")) is None:
            continue  # not even the least memory fits
        for rc in ("none", "selective", "full"):
            lay = replace(base, recompute=rc)
            first = _fits(shape, run, lay)
            if first is None:
                continue
            yield first
            if lay.pp == 1 or lay.schedule == "dualpipe":
                continue
            for v in range(2, shape.n_layers // lay.pp + 1):  # in flight at stage 0: p + (p - 1)/v micro-batches
                nxt = _fits(shape, run, replace(lay, virtual_stages=v))  # (capped at m): fewer as v grows
                if nxt is not None:
                    yield nxt


def _why(p: Plan, best: Plan) -> str:
    """The part of `p`'s step that grew most over the best's."""
    mine, theirs = p.breakdown(), best.breakdown()
    name = max(mine, key=lambda k: mine[k] - theirs.get(k, 0.0))
    return f"{name} {mine[name]:.2f} s vs {theirs.get(name, 0.0):.2f} s"


def search(shape: ModelShape, run: Run, top: int = 5, where=None) -> list[Ranked]:
    """The `top` fastest layouts a framework can launch that fit (for a fixed number of GPUs the fastest is also the
    cheapest), each with what it loses to the best and whether it ties with it (closer than reached.TIE: the planner
    cannot tell them apart); `where(layout) -> bool` keeps only some (e.g. a published TP and PP)."""
    found = [p for p in _candidates(shape, run) if where is None or where(p.layout)]
    found.sort(key=lambda x: (round(x.step_s, 6), x.memory["total"]))
    if not found:
        return []
    best = found[0]
    return [Ranked(p, p.step_s / best.step_s - 1, _why(p, best) if p is not best else "",
                   p.step_s / best.step_s - 1 < reached.TIE) for p in found[:top]]


def tied(ranking: list[Ranked]) -> list[Ranked]:
    """The layouts of a ranking that tie with its first (the first included)."""
    return [r for r in ranking if r.loss == 0 or r.tied]
