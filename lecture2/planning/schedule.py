"""Pipeline schedules: how the layers split into stages, how much of the step is the bubble, and how many
micro-batches' activations each stage holds at its peak. Closed forms, and a simulator that runs the schedule itself.

    1F1B (PipeDream-flush; Narayanan et al. 2021)   p stages, m micro-batches: the pipeline takes (m + p - 1) slots of
        one micro-batch's forward + backward; the bubble is (p - 1)/(m + p - 1) of it. Stage s (0 = first) runs
        p - s - 1 warm-up forwards and then one more before its first backward: min(p - s, m) micro-batches in flight.
    interleaved 1F1B (Megatron's virtual pipeline)   each stage holds v chunks of layers/v layers; the bubble shrinks to
        (p - 1)/v slots: (p - 1)/(v·m + p - 1) of the pipeline. Stage s warms up 2(p - s - 1) + (v - 1)·N chunk
        forwards (N: micro-batches per group, Megatron's microbatch_group_size_per_vp_stage, default p) and holds one
        more: min(2(p - s - 1) + (v - 1)·N + 1, v·m) chunks of layers/v layers, i.e. that / v micro-batches' worth of
        the stage's activations (Korthikanti et al. 2022, §4.2.3: p(1 + (p - 1)/(p·v)) at the first stage).
    DualPipe (DeepSeek-V3 §3.2.1)   two pipelines in opposite directions on the same p ranks; a forward and a backward
        chunk overlap, hiding each other's all-to-all. Bubble (p/2 - 1)(F&B + B - 3W), with B = 2F and W = B/2: (p/2 - 1)
        x 2F; every rank holds its parameters twice and p + 1 micro-batches' activations.

`simulate(p, m, v)` runs Megatron's interleaved order (forward chunks in groups of N micro-batches, backward in the
same order, 1F1B in steady state) as a discrete-event simulation with forward = 1 and backward = 2 time units per chunk
and free communication: the measured bubble and peak chunks in flight per stage. Notebook 11's exercise on the schedule
is checked against it.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

__all__ = ["Simulation", "bubble_fraction", "bubble_slots", "dualpipe_bubble_slots", "in_flight_chunks", "in_flight_layers",
           "simulate", "stage_layers"]


def stage_layers(n_layers: int, pp: int, fewer_at_ends: int = 0, first: int | None = None,
                 last: int | None = None) -> list[int]:
    """Layers of each pipeline stage: as even as possible, the first and last stage `fewer_at_ends` fewer (Llama 3
    405B: 126 layers on 16 stages, one fewer on the first and last, which hold the embedding and the head), or
    `first` and `last` layers on those stages and the rest spread over the others (Megatron's
    --decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers: a last stage that also runs a large
    head, or DeepSeek-V3's multi-token-prediction module, takes fewer)."""
    if pp == 1:
        return [n_layers]
    if first is not None or last is not None:
        middle = pp - (first is not None) - (last is not None)
        rest = n_layers - (first or 0) - (last or 0)
        if middle < 1 or rest < middle:
            raise ValueError(f"{n_layers} 层分不成 {pp} 段 (first={first}, last={last})")
        spread = [rest // middle + (1 if i < rest % middle else 0) for i in range(middle)]
        return ([first] if first is not None else []) + spread + ([last] if last is not None else [])
    base = math.ceil((n_layers + 2 * fewer_at_ends) / pp)
    ends = base - fewer_at_ends
    if ends < 1 or (pp == 2 and 2 * ends != n_layers and fewer_at_ends):
        raise ValueError(f"{n_layers} 层分不成 {pp} 段 (首尾各少 {fewer_at_ends} 层)")
    middle_total = n_layers - 2 * ends
    counts = [ends] + [0] * (pp - 2) + [ends] if pp > 2 else [ends, n_layers - ends]
    for i in range(pp - 2):  # spread the rest over the middle stages, the earlier ones first
        counts[1 + i] = middle_total // (pp - 2) + (1 if i < middle_total % (pp - 2) else 0)
    if min(counts) < 1 or sum(counts) != n_layers:
        raise ValueError(f"{n_layers} 层分不成 {pp} 段")
    return counts


def in_flight_chunks(stage: int, pp: int, micro_batches: int, virtual: int = 1, group: int | None = None) -> int:
    """Chunk forwards stage `stage` holds for backward at its peak (a chunk: layers / virtual of its layers).
    virtual = 1: min(p - s, m); interleaved with Megatron's groups of N = p: min(2(p - s - 1) + (v - 1)·p + 1, v·m);
    any other group N (Llama 3's flexible N): what `simulate` measures."""
    if virtual == 1:
        return min(pp - stage, micro_batches)
    if group is None:
        return min(2 * (pp - stage - 1) + (virtual - 1) * pp + 1, virtual * micro_batches)
    return _simulated(pp, micro_batches, virtual, group).peak_in_flight[stage]


def bubble_slots(pp: int, micro_batches: int, virtual: int = 1, group: int | None = None) -> float:
    """The pipeline's idle time in slots (one micro-batch's forward and backward through a stage, all its chunks):
    (p - 1)/v for 1F1B and Megatron's interleaving; for another group N, what `simulate` measures (forward 1 and
    backward 2 units per chunk, a slot 3·v units)."""
    if virtual == 1 or group is None:
        return (pp - 1) / virtual
    sim = _simulated(pp, micro_batches, virtual, group)
    return (sim.makespan - sim.busy[0]) / (3 * virtual)


@functools.lru_cache(maxsize=512)
def _simulated(pp: int, micro_batches: int, virtual: int, group: int) -> "Simulation":
    return simulate(pp, micro_batches, virtual, group)


def in_flight_layers(layers: int, stage: int, pp: int, micro_batches: int, virtual: int = 1,
                     group: int | None = None) -> float:
    """Layer-activations (one layer of one micro-batch each) stage `stage`, holding `layers` layers, keeps at its
    peak: its in-flight chunks x layers / virtual."""
    return in_flight_chunks(stage, pp, micro_batches, virtual, group) * layers / virtual


def bubble_fraction(pp: int, micro_batches: int, virtual: int = 1) -> float:
    """The pipeline's idle share of its time: (p - 1)/(v·m + p - 1)."""
    return (pp - 1) / (virtual * micro_batches + pp - 1)


def dualpipe_bubble_slots(pp: int) -> float:
    """DualPipe's bubble in units of one chunk's forward F: (p/2 - 1)(F&B + B - 3W) (DeepSeek-V3, Table 2), with the
    overlapped pair F&B = F + B, B = 2F and the weight-gradient part W = B/2 = F: (p/2 - 1)·2F = (p - 2)·F."""
    return max(0.0, pp - 2.0)


@dataclass(frozen=True)
class Simulation:
    """A schedule run as a discrete-event simulation: its length, busy time per stage and peak chunks in flight."""

    pp: int
    micro_batches: int
    virtual: int
    makespan: float
    busy: tuple[float, ...]
    peak_in_flight: tuple[int, ...]
    events: tuple[tuple[int, str, int, int, float, float], ...] = ()  # (stage, "F"/"B", micro-batch, chunk, start, end)

    @property
    def bubble(self) -> float:
        """Idle share of the first stage's time (every stage is idle as long in these schedules)."""
        return 1 - self.busy[0] / self.makespan


def _order(stage: int, pp: int, m: int, v: int, group: int) -> list[tuple[str, int, int]]:
    """Megatron's order of (pass, micro-batch, chunk) on `stage`: forwards of group-sized runs of micro-batches chunk
    by chunk (the last run shorter when the group does not divide m: Llama 3's flexible N), warm-up, then one forward /
    one backward, then the cool-down backwards."""
    total = m * v
    forwards, backwards = [], []
    for first in range(0, m, group):
        run = range(first, min(first + group, m))
        forwards += [(mb, chunk) for chunk in range(v) for mb in run]
        backwards += [(mb, v - 1 - chunk) for chunk in range(v) for mb in run]
    if v == 1:
        warm = min(pp - stage - 1, m)
    else:
        warm = min(2 * (pp - stage - 1) + (v - 1) * group, total)
    order, f, b = [], 0, 0
    for _ in range(warm):
        order.append(("F", *forwards[f]))
        f += 1
    while f < total:
        order.append(("F", *forwards[f]))
        f += 1
        order.append(("B", *backwards[b]))
        b += 1
    while b < total:
        order.append(("B", *backwards[b]))
        b += 1
    return order


def simulate(pp: int, micro_batches: int, virtual: int = 1, group: int | None = None,
             forward: float = 1.0, backward: float = 2.0) -> Simulation:
    """Run Megatron's (interleaved) 1F1B order on `pp` stages: a chunk's forward waits for the same micro-batch's
    previous chunk (the stage before, or the last stage for the next chunk round), its backward for the next one's
    backward; each stage runs its order one unit at a time. Megatron's groups (`group` None: N = p) need m to be a
    multiple of p; another N (Llama 3, §3.3.2: "allows setting N flexibly") runs groups of N, the last one shorter.
    An order that cannot run (with Megatron's warm-up, any N below p - 1 unless every forward fits in the warm-up:
    stage 0 waits for a chunk the last stage computes only after a backward that waits for stage 0) is a
    ValueError."""
    p, m, v = pp, micro_batches, virtual
    n = p if group is None else group
    if min(p, m, v, n) < 1 or (v > 1 and group is None and m % n):
        raise ValueError(f"interleaving 需要 micro-batch 数 ({m}) 是 pp ({p}) 的倍数 (Megatron), 或给出组大小 group "
                         f"(Llama 3's flexible N)")
    orders = [_order(s, p, m, v, n) for s in range(p)]
    done: dict[tuple[str, int, int, int], float] = {}  # (pass, micro-batch, virtual stage index, stage) -> finish
    pos, clock = [0] * p, [0.0] * p
    busy, live, peak = [0.0] * p, [0] * p, [0] * p
    events = []
    last = p * v - 1  # virtual stage index of the model's last chunk
    progress = True
    while progress:
        progress = False
        for s in range(p):
            while pos[s] < len(orders[s]):
                kind, mb, chunk = orders[s][pos[s]]
                vs = chunk * p + s  # the chunk's place in the model
                if kind == "F":
                    dep = None if vs == 0 else ("F", mb, vs - 1)
                else:
                    dep = ("F", mb, last) if vs == last else ("B", mb, vs + 1)
                if dep is not None and dep not in done:
                    break
                start = max(clock[s], done[dep] if dep else 0.0)
                cost = forward if kind == "F" else backward
                clock[s] = start + cost
                busy[s] += cost
                done[(kind, mb, vs)] = clock[s]
                events.append((s, kind, mb, chunk, start, clock[s]))
                live[s] += 1 if kind == "F" else -1
                peak[s] = max(peak[s], live[s])
                pos[s] += 1
                progress = True
    if any(pos[s] < len(orders[s]) for s in range(p)):
        raise ValueError(f"这个调度会死锁 (this order deadlocks): p={p}, m={m}, v={v}, N={n}: with Megatron's warm-up, "
                         f"stage 0 waits for a chunk the last stage computes only after a backward that waits for stage 0")
    return Simulation(p, m, v, max(clock), tuple(busy), tuple(peak), tuple(events))

