"""Which algorithm NCCL runs a collective with, and how long it takes: NCCL 2.23's tuning model (src/graph/tuning.cc
at v2.23.4-1, the first release with PAT) fed with the bus bandwidths nccl-tests measures on the cluster's nodes
(lecture2.hardware.CLUSTERS) instead of NCCL's own topology search.

For each algorithm and protocol NCCL can use for a collective on a group, it estimates

    time = latency + bytes / algorithm bandwidth

and runs the fastest (ncclTopoGetAlgoTime); so does `choose`. What is modelled:

    ring        every collective; Simple, LL128 (0.92 x the bandwidth, lower per-step latency), LL (half the bandwidth,
                capped: for tiny messages); latency 8.4 µs (Simple) + each ring step inside a node (3.4 µs on NVLink) and
                across nodes (14 µs); multi-node ring all-reduce x 1.4 on Ampere and newer ("plateau effect")
    tree        all-reduce across nodes: log2(nodes) network steps instead of 2(n - 1); 0.92 x the bandwidth, half of it
                as algorithm bandwidth (a double binary tree sends each byte up and down), NCCL's size correction
    NVLS        all-reduce inside one NVSwitch node on Hopper (NVLink SHARP: the switch reduces): 25 µs, the measured
                NVLS bus bandwidth (H100: 480 GB/s against the ring's 370)
    NVLS-tree   all-reduce across NVSwitch nodes: NVLS inside, a tree across (half the NICs' bandwidth beyond 2 nodes)
    PAT         all-gather / reduce-scatter with one GPU per node (NCCL >= 2.23): log2(nodes) network latency plus
                2.8 µs per rank instead of the ring's 14 µs per node, 0.85 x the bandwidth
    not modelled: CollNet (needs the SHARP network plugin, off by default), user overrides (NCCL_ALGO/NCCL_PROTO)

Bus bandwidth of a group of n ranks, r of them on each of N nodes, Simple protocol: inside a node the measured NVLink
ring figure; across nodes min(NVLink's, r x the measured per-NIC figure x NICs per GPU) (NCCL builds a ring per NIC;
a node's NICs together carry what one rank sends: NVIDIA/nccl issues #412, #652, #687). Algorithm bandwidth =
bus bandwidth x n / steps for the ring (nccl-tests' busbw definition), as tuning.cc converts it.
Units: bytes, seconds, bytes/s.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from ..hardware import ClusterSpec

__all__ = ["BASE_LATENCY_S", "NCCL_VERSION", "NET_STEP_S", "NVLINK_STEP_S", "RING_PLATEAU", "Choice", "Group",
           "choose", "group", "plateau_applies", "ring_plateau", "ring_seconds", "ring_steps",
           "seconds"]

NCCL_VERSION = "2.23.4"
US = 1e-6
# tuning.cc v2.23.4: baseLat[algorithm][LL, LL128, Simple] and hwLat[NVLINK|NET][algorithm][protocol], in µs
_BASE = {"tree": (6.8, 14.0, 8.4), "ring": (6.6, 14.0, 8.4), "nvls": (0, 0, 0), "nvls_tree": (0, 0, 0)}
_HW_NVLINK = {"tree": (0.6, 1.25, 4.0), "ring": (0.6, 1.9, 3.4), "nvls": (0, 0, 25), "nvls_tree": (0, 0, 25)}
_HW_NET = {"tree": (5.0, 8.5, 14), "ring": (2.7, 4.0, 14.0), "nvls": (0, 0, 18), "nvls_tree": (0, 0, 14)}
_PROTOCOLS = ("LL", "LL128", "Simple")
CHANNELS = 16  # NCCL's channels on an 8-GPU, 8-NIC node (2 per NIC): the per-channel caps below and the plateau
_LL_MAX = {"hopper": 141.0, "ampere": 87.7}  # llMaxBws single node (GB/s); multi-node (Intel CPUs): 39 (2 nodes), 20.4
_LL128_PER_CHANNEL = {"hopper": 36.7, "ampere": 20.0}  # perChMaxRingLL128Bws (GB/s)
_TREE_PER_CHANNEL = {"hopper": (38.7, 41.4, 36.0), "ampere": (24.0, 23.6, 17.8)}  # perChMaxTreeBws N1/N2/N4 (GB/s)
# treeCorrectionFactor[protocol][log2(bytes / 64)], powers of two from 64 B to 256 MB
_TREE_CORRECTION = {
    "LL": (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0),
    "LL128": (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0),
    "Simple": (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9),
}
OPS = ("all_reduce", "all_gather", "reduce_scatter", "send")
# The ring's Simple protocol, the one large messages use: what lecture2.network's textbook ring reads from here
BASE_LATENCY_S = _BASE["ring"][2] * US  # per call
NVLINK_STEP_S = _HW_NVLINK["ring"][2] * US  # per ring step inside a node
NET_STEP_S = _HW_NET["ring"][2] * US  # per ring step that crosses nodes
RING_PLATEAU = {"volta": 1.9, "ampere": 1.4, "hopper": 1.4, "blackwell": 1.4}  # compute capability < 8.0: 1.9


def ring_steps(op: str, ranks: int, nodes: int = 1) -> tuple[int, int]:
    """(all steps, steps that cross nodes) of a ring `op` over `ranks` ranks on `nodes` nodes (NCCL's count;
    broadcast and reduce pipeline down the ring, a send is one hop)."""
    if op == "all_reduce":
        return 2 * (ranks - 1), 2 * (nodes - 1)
    if op in ("all_gather", "reduce_scatter"):
        return ranks - 1, nodes - 1
    return ranks, nodes


def plateau_applies(op: str, nbytes: float, ranks: int, nodes: int) -> bool:
    """Whether NCCL's "plateau effect of ring" (ncclTopoGetAlgoTime, tuning.cc since 2.19) applies: a multi-node
    ring all-reduce with at least 64 bytes per channel and rank (CHANNELS channels, what an 8-NIC node opens)."""
    return op == "all_reduce" and nodes > 1 and nbytes / (CHANNELS * ranks) >= 64


def ring_plateau(op: str, nbytes: float, ranks: int, nodes: int, arch: str) -> float:
    """The factor NCCL multiplies a ring's latency by: 1.4 on compute capability >= 8.0, 1.9 before, where
    `plateau_applies`; 1 otherwise."""
    return RING_PLATEAU.get(arch, RING_PLATEAU["volta"]) if plateau_applies(op, nbytes, ranks, nodes) else 1.0


@dataclass(frozen=True)
class Group:
    """A communicator: `ranks` GPUs of `cluster`, `per_node` of them in each of `nodes` nodes."""

    cluster: ClusterSpec
    ranks: int
    per_node: int

    @property
    def nodes(self) -> int:
        return self.ranks // self.per_node

    @property
    def arch(self) -> str:
        arch = self.cluster.gpu_spec.arch
        return arch if arch in ("hopper", "ampere") else "hopper"

    @property
    def ring_busbw(self) -> float:
        """Simple-protocol bus bandwidth of a ring over this group (bytes/s), from the measured figures."""
        c = self.cluster
        if self.nodes == 1:
            return c.ring_busbw_bytes_per_s
        return min(c.ring_busbw_bytes_per_s, self.per_node * c.nic_busbw_per_gpu)


def group(cluster: ClusterSpec, ranks: int, per_node: int | None = None) -> Group:
    """The communicator of `ranks` GPUs, `per_node` per node (default: as many as fit in one node)."""
    g = cluster.gpus_per_node
    r = min(ranks, g) if per_node is None else per_node
    if ranks < 1 or r < 1 or r > g or r > ranks or ranks % r:
        raise ValueError(f"{ranks} ranks, {r} per node: 每个节点最多 {g} 个 GPU, 且每节点的 rank 数要整除总数")
    return Group(cluster, ranks, r)


@dataclass(frozen=True)
class Choice:
    """NCCL's pick for one collective: algorithm, protocol, seconds, and the algorithm bandwidth it assumed."""

    algorithm: str
    protocol: str
    seconds: float
    algbw: float  # bytes/s: bytes / (seconds - latency)

    def describe(self) -> str:
        return f"{self.algorithm}/{self.protocol}"


def _ring(op: str, nbytes: float, g: Group, p: int) -> tuple[float, float]:
    """(latency s, algorithm bandwidth bytes/s) of a ring with protocol index p (LL, LL128, Simple)."""
    n, nodes = g.ranks, g.nodes
    busbw = g.ring_busbw / 1e9  # GB/s, as tuning.cc works
    if p == 0:
        busbw = min(_LL_MAX[g.arch] if nodes == 1 else (39.0 if nodes == 2 else 20.4), busbw * 0.5)
    elif p == 1:
        busbw = min(busbw * 0.92, CHANNELS * _LL128_PER_CHANNEL[g.arch])
    steps, inter_steps = ring_steps(op, n, nodes)
    algbw = busbw * n / steps * 1e9
    intra = _HW_NVLINK["ring"][p]
    if nodes > 1:
        intra = max(intra, 1.0 * (3 if p == 2 else 1))  # Intel CPUs: 1 µs network overhead, x 3 for Simple
    inter = (_HW_NET["tree"] if g.per_node == 1 else _HW_NET["ring"])[p]
    latency = _BASE["ring"][p] + (steps - inter_steps) * intra + inter_steps * inter
    if p == 2:
        latency *= ring_plateau(op, nbytes, n, nodes, g.cluster.gpu_spec.arch)
    return latency * US, algbw


def _tree(nbytes: float, g: Group, p: int) -> tuple[float, float]:
    nodes = g.nodes
    busbw = g.ring_busbw / 1e9
    cap = CHANNELS * _TREE_PER_CHANNEL[g.arch][min(nodes, 3) - 1]
    busbw = min(busbw * 0.92, cap)
    if p == 0:
        busbw = min(busbw / 3.8, _LL_MAX[g.arch] if nodes == 1 else 20.4)
    elif p == 1:
        busbw = min(busbw * (7 / 9 if nodes == 1 else 120 / 128), cap)
    log_size = int(math.log2(max(nbytes, 64) / 64))
    if log_size < 24:
        busbw *= _TREE_CORRECTION[_PROTOCOLS[p]][log_size]
    intra = _HW_NVLINK["tree"][p]
    inter = _HW_NET["tree"][p]
    latency = _BASE["tree"][p] + 2 * ((g.per_node - 1) * intra + int(math.log2(nodes)) * inter)
    return latency * US, busbw * 0.5 * 1e9


def _candidates(op: str, nbytes: float, g: Group):
    """(algorithm, protocol, latency s, algorithm bandwidth bytes/s) of everything NCCL would consider."""
    c = g.cluster
    for p in range(3):
        yield ("ring", _PROTOCOLS[p], *_ring(op, nbytes, g, p))
    if op == "all_reduce":
        if g.nodes > 1:
            for p in range(3):
                yield ("tree", _PROTOCOLS[p], *_tree(nbytes, g, p))
        if c.nvls_busbw_bytes_per_s and g.per_node == c.gpus_per_node:  # NVLS needs the whole NVSwitch node
            n = g.per_node
            nvls_algbw = c.nvls_busbw_bytes_per_s * n / (2 * (n - 1))  # measured busbw -> algbw (nccl-tests)
            if g.nodes == 1:
                yield ("NVLS", "Simple", _HW_NVLINK["nvls"][2] * US, nvls_algbw)
            else:
                inter = g.per_node * c.nic_busbw_per_gpu / (2 if g.nodes > 2 else 1)
                latency = _HW_NVLINK["nvls_tree"][2] + 2 * int(math.log2(g.nodes)) * _HW_NET["nvls_tree"][2]
                yield ("NVLS-tree", "Simple", latency * US, min(nvls_algbw, inter * 5 / 6))
    if op in ("all_gather", "reduce_scatter") and g.per_node == 1 and g.nodes > 1:  # PAT: one GPU per node
        latency = 8 + int(math.log2(g.nodes)) * _HW_NET["tree"][2] / 3.5 + g.ranks * 2.8
        yield ("PAT", "Simple", latency * US, 0.85 * g.ring_busbw)


def choose(op: str, nbytes: float, g: Group) -> Choice:
    """NCCL's fastest algorithm and protocol for one `op` on a tensor of `nbytes` (the whole tensor: the input of a
    reduce-scatter, the output of an all-gather) over the group `g`."""
    if op not in OPS:
        raise ValueError(f"未知的集合通信 {op!r}; known: {', '.join(OPS)}")
    if not (nbytes >= 0 and math.isfinite(nbytes)):
        raise ValueError(f"nbytes 应 >= 0 且有限, 得到 {nbytes!r}")
    if g.ranks == 1 or nbytes == 0:
        return Choice("none", "-", 0.0, math.inf)
    if op == "send":  # point to point: one hop over NVLink or the GPU's own NIC
        c = g.cluster
        bw = c.ring_busbw_bytes_per_s if g.nodes == 1 else c.nic_busbw_per_gpu  # the sender's own NIC
        lat = _BASE["ring"][2] + (_HW_NVLINK["ring"][2] if g.nodes == 1 else _HW_NET["ring"][2])
        return Choice("p2p", "Simple", lat * US + nbytes / bw, bw)
    return _best(op, float(nbytes), g)


@functools.lru_cache(maxsize=4096)
def _best(op: str, nbytes: float, g: Group) -> Choice:
    best = None
    for algorithm, protocol, latency, algbw in _candidates(op, nbytes, g):
        t = latency + nbytes / algbw
        if best is None or t < best.seconds:
            best = Choice(algorithm, protocol, t, algbw)
    return best


def ring_seconds(op: str, nbytes: float, g: Group, protocol: str = "Simple") -> float:
    """Seconds of one ring `op` of `nbytes` over `g` with `protocol`, whatever NCCL would pick (lecture2.network's
    textbook ring is this with Simple)."""
    if g.ranks == 1 or nbytes == 0:
        return 0.0
    latency, algbw = _ring(op, float(nbytes), g, _PROTOCOLS.index(protocol))
    return latency + nbytes / algbw


def seconds(op: str, nbytes: float, g: Group, calls: int = 1) -> float:
    """Seconds for `calls` collectives `op` of `nbytes` each over `g`, each as NCCL would run it."""
    return calls * choose(op, nbytes, g).seconds
