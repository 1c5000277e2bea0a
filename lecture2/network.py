"""How long a ring collective takes on a cluster: NCCL's bus bandwidth and latency, as NCCL itself models them
(NCCL 2.23.4's src/graph/tuning.cc, the same version lecture2.planning.collectives models; that module also picks the
algorithm NCCL would run instead of the ring: tree, NVLS, PAT).

    seconds = latency + S × factor / bus bandwidth

S is the size of the whole tensor (the input of a reduce-scatter, the output of an all-gather), as in notebook
10's table and in NVIDIA's nccl-tests (PERFORMANCE.md): there `algbw = S / time` and `busbw = algbw × factor`,
the factor being what one rank of a ring sends per byte of S,

    all_reduce 2(n-1)/n      all_gather, reduce_scatter (n-1)/n      broadcast, reduce, send 1

so that bus bandwidth is a property of the links, the same for every n, and comparable with a datasheet.

Bus bandwidth of a group of n ranks, r of them on each of N nodes (`link`), from what nccl-tests measures on the
cluster's nodes (lecture2.hardware.CLUSTERS: about 80% of NVLink's line rate, 94% of a NIC's), not the datasheet:
    N = 1   the measured NVLink ring bus bandwidth (H100: 370 of 450 GB/s per direction)
    N > 1   min(that, r × the measured NIC bandwidth per GPU). NCCL builds one ring channel per NIC; each channel
            enters and leaves a node once, so in a ring over whole nodes the node's NICs together carry what one
            rank sends, and bus bandwidth grows with the NICs per node (NVIDIA/nccl issues #412, #652, #687: a
            DGX H100 with 8 x 400 Gb/s NICs of 47 GB/s measured each reaches 8 x 47 GB/s, capped by NVLink's 370,
            not one NIC's 47). A group with one rank per node (the data-parallel group of a TP = 8 layout) gets
            that rank's own NIC.

Latency (NCCL's own tuning model, src/graph/tuning.cc, ring algorithm, Simple protocol, the one large messages
use): 8.4 µs per call, plus 3.4 µs for each ring step inside a node and 14 µs for each step that crosses nodes;
an all-reduce has 2(n-1) steps of which 2(N-1) cross nodes, an all-gather or reduce-scatter n-1 of which N-1.
NCCL multiplies a multi-node ring all-reduce's latency by 1.4 on Ampere and newer GPUs (1.9 on Volta) once it
carries at least 64 bytes per channel and rank ("plateau effect of ring", tuning.cc since 2.19). Every one of these
numbers and rules is lecture2.planning.collectives' (the planner's NCCL model), read from there: one ring model, not
two. A bucketed engine (DDP, FSDP's units) pays the latency once per bucket or unit.

Hierarchical collectives (`hierarchical_all_reduce_seconds`): reduce-scatter inside each node over NVLink,
all-reduce of each GPU's 1/r across nodes over its share of the NICs, all-gather inside the node; the three
phases run one after the other. NCCL's flat ring pipelines the same traffic and is the faster of the two in
bandwidth; the hierarchy needs fewer steps (latency) and is how HSDP and 2D meshes are built.

On a live gloo group (notebook 11) the same two numbers are fitted from two message sizes (`fit`) and used to
predict a third, printed beside the measurement. Units: bytes, seconds, bytes/s.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .hardware import ClusterSpec
from .planning import collectives as nccl

__all__ = ["NCCL_BASE_LATENCY_S", "NCCL_NET_STEP_S", "NCCL_NVLINK_STEP_S", "NCCL_VERSION", "OPS", "Fit", "Link", "bus_factor",
           "collective_seconds", "fit", "hierarchical_all_reduce_seconds", "latency_seconds", "link", "ring_steps"]

# NCCL src/graph/tuning.cc (v2.23.4), as lecture2.planning.collectives states it: baseLat[Ring][Simple] and
# hwLat[NVLINK|NET][Ring][Simple]; the multi-node ring all-reduce's "plateau" factor
NCCL_BASE_LATENCY_S = nccl.BASE_LATENCY_S
NCCL_NVLINK_STEP_S = nccl.NVLINK_STEP_S
NCCL_NET_STEP_S = nccl.NET_STEP_S
NCCL_VERSION = nccl.NCCL_VERSION
NCCL_RING_PLATEAU = nccl.RING_PLATEAU["ampere"]  # compute capability >= 8.0
NCCL_RING_PLATEAU_VOLTA = nccl.RING_PLATEAU["volta"]  # the same before Ampere (and in every NCCL before 2.19)

OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "send")


def bus_factor(op: str, n: int) -> float:
    """Bytes one rank sends per byte of S in a ring over `n` ranks (nccl-tests' bus bandwidth factor)."""
    _check_op(op)
    _check_count(n, "n")
    if n == 1:
        return 0.0
    if op == "all_reduce":
        return 2 * (n - 1) / n
    if op in ("all_gather", "reduce_scatter"):
        return (n - 1) / n
    return 1.0  # broadcast, reduce, send: the whole S passes each link once


def ring_steps(op: str, n: int, nodes: int = 1) -> tuple[int, int]:
    """(all steps, steps that cross nodes) of a ring collective over `n` ranks on `nodes` nodes (NCCL's count)."""
    _check_op(op)
    _check_count(n, "n")
    _check_count(nodes, "nodes")
    return nccl.ring_steps(op, n, nodes)  # broadcast, reduce: a pipeline down the ring; send: one hop


@dataclass(frozen=True)
class Link:
    """What one group of ranks sees of the network: its bus bandwidth and latency terms (see the module's text).

    A fitted link (`fit`) has only `base_latency_s` and `bus_bytes_per_s`; a cluster's (`link`) also the per-step
    latencies and the layout they come from."""

    ranks: int
    bus_bytes_per_s: float
    base_latency_s: float
    nodes: int = 1
    step_intra_s: float = 0.0
    step_inter_s: float = 0.0
    plateau: float = 1.0  # NCCL's multi-node ring all-reduce correction (1.9) where it applies
    name: str = ""

    def __post_init__(self):
        _check_count(self.ranks, "ranks")
        _check_count(self.nodes, "nodes")
        if not (self.bus_bytes_per_s > 0 and math.isfinite(self.bus_bytes_per_s)):
            raise ValueError(f"bus_bytes_per_s 应 > 0 且有限, 得到 {self.bus_bytes_per_s!r}")
        for name in ("base_latency_s", "step_intra_s", "step_inter_s"):
            value = getattr(self, name)
            if not (value >= 0 and math.isfinite(value)):
                raise ValueError(f"{name} 应 >= 0 且有限, 得到 {value!r}")


def link(cluster: ClusterSpec, ranks: int, ranks_per_node: int | None = None) -> Link:
    """The link a group of `ranks` GPUs of `cluster` sees, `ranks_per_node` of them in each node (default: as
    many as fit, i.e. min(ranks, GPUs per node)); a group that fits in one node stays on NVLink."""
    _check_count(ranks, "ranks")
    g = cluster.gpus_per_node
    r = min(ranks, g) if ranks_per_node is None else ranks_per_node
    _check_count(r, "ranks_per_node")
    if r > g or r > ranks or ranks % r:
        raise ValueError(f"ranks_per_node={r} 不行: 每个节点最多 {g} 个 GPU, 且要整除 ranks={ranks}")
    nodes = ranks // r
    bus = nccl.group(cluster, ranks, r).ring_busbw  # the planner's own bus bandwidth of this group
    if nodes == 1:
        name = (f"{ranks} GPUs in one node, NVLink {bus / 1e9:.0f} GB/s measured "
                f"(of {cluster.nvlink_bytes_per_s / 1e9:.0f})")
    else:
        name = (f"{ranks} GPUs on {nodes} nodes ({r} per node): {r} x {cluster.nic_busbw_per_gpu / 1e9:.0f} GB/s "
                f"of NICs measured")
    plateau = nccl.RING_PLATEAU.get(cluster.gpu_spec.arch, nccl.RING_PLATEAU["volta"])
    return Link(ranks, bus, NCCL_BASE_LATENCY_S, nodes, NCCL_NVLINK_STEP_S, NCCL_NET_STEP_S,
                plateau if nodes > 1 else 1.0, name)


def latency_seconds(op: str, lk: Link, nbytes: float = 0.0) -> float:
    """The latency term of one collective `op` on `lk` (seconds): base + the ring's steps (NCCL's model)."""
    if lk.ranks == 1:
        return 0.0
    steps, inter = ring_steps(op, lk.ranks, lk.nodes)
    if op == "send":
        steps, inter = 1, 1 if lk.nodes > 1 else 0
    lat = lk.base_latency_s + (steps - inter) * lk.step_intra_s + inter * lk.step_inter_s
    if nccl.plateau_applies(op, nbytes, lk.ranks, lk.nodes):  # NCCL's size rule; the factor is the link's
        lat *= lk.plateau
    return lat


def collective_seconds(op: str, nbytes: float, lk: Link, calls: int = 1) -> float:
    """Seconds for `calls` collectives `op`, each on a whole tensor of `nbytes` bytes, over the group of `lk`:
    calls × latency + calls × nbytes × bus_factor / bus bandwidth."""
    _check_op(op)
    if not (nbytes >= 0 and math.isfinite(nbytes)):
        raise ValueError(f"nbytes 应 >= 0 且有限, 得到 {nbytes!r}")
    if not isinstance(calls, int) or isinstance(calls, bool) or calls < 0:
        raise ValueError(f"calls 应是 >= 0 的整数, 得到 {calls!r}")
    if lk.ranks == 1 or calls == 0:
        return 0.0
    return calls * (latency_seconds(op, lk, nbytes) + nbytes * bus_factor(op, lk.ranks) / lk.bus_bytes_per_s)


def hierarchical_all_reduce_seconds(nbytes: float, cluster: ClusterSpec, ranks: int,
                                    ranks_per_node: int | None = None) -> float:
    """An all-reduce of `nbytes` done in three phases one after another: reduce-scatter inside each node (NVLink),
    all-reduce of each GPU's 1/r share across the nodes (its NIC share), all-gather inside the node."""
    r = min(ranks, cluster.gpus_per_node) if ranks_per_node is None else ranks_per_node
    nodes = ranks // r
    if nodes * r != ranks:
        raise ValueError(f"ranks={ranks} 不能按每节点 {r} 个分成整节点")
    inside = link(cluster, r, r)
    across = Link(nodes, cluster.nic_busbw_per_gpu, NCCL_BASE_LATENCY_S, nodes, 0.0, NCCL_NET_STEP_S,
                  NCCL_RING_PLATEAU if nodes > 1 else 1.0, "one GPU per node, its own NIC")
    return (collective_seconds("reduce_scatter", nbytes, inside) + collective_seconds("all_reduce", nbytes / r, across)
            + collective_seconds("all_gather", nbytes, inside))


@dataclass(frozen=True)
class Fit:
    """α-β from two measured sizes: seconds ≈ latency_s + S × factor / bus_bytes_per_s."""

    op: str
    ranks: int
    latency_s: float
    bus_bytes_per_s: float
    sizes: tuple[float, float]
    seconds: tuple[float, float]

    def predict(self, nbytes: float) -> float:
        """Seconds the fitted model gives for one collective on a tensor of `nbytes` bytes."""
        return self.latency_s + nbytes * bus_factor(self.op, self.ranks) / self.bus_bytes_per_s

    def as_link(self) -> Link:
        return Link(self.ranks, self.bus_bytes_per_s, max(self.latency_s, 0.0), name=f"fitted {self.op}")


def fit(op: str, ranks: int, sizes: tuple[float, float], seconds: tuple[float, float]) -> Fit:
    """Latency and bus bandwidth of `op` on `ranks` ranks from two (size in bytes, seconds) measurements: the
    line through both points. The larger message must take longer (else the two times are noise: ValueError)."""
    _check_op(op)
    (s1, s2), (t1, t2) = sizes, seconds
    if not (s2 > s1 > 0):
        raise ValueError(f"sizes 应是两个递增的正数, 得到 {sizes!r}")
    if not (t2 > t1 > 0):
        raise ValueError(f"大消息应更慢 (the larger message must take longer): {seconds!r} — 时间是噪声")
    slope = (t2 - t1) / (s2 - s1)  # seconds per byte of S
    return Fit(op, ranks, t1 - slope * s1, bus_factor(op, ranks) / slope, (s1, s2), (t1, t2))


def _check_op(op: str) -> None:
    if op not in OPS:
        raise ValueError(f"未知的集合通信 {op!r}; known: {', '.join(OPS)}")


def _check_count(value: int, what: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{what} 应是正整数 (a positive int), 得到 {value!r}")
