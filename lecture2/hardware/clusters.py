"""Clusters: the nodes GPUs are trained on (GPUs per node, NVLink bandwidth per GPU, NICs per node and their
bandwidth, measured bus bandwidths), each row from its system's datasheet. `lecture2.network` turns a row into the
time of a collective (NCCL's bus bandwidth and latency model)."""
from __future__ import annotations

from dataclasses import dataclass

from .gpus import GB, GPUS, GPUSpec, UnknownGPU


# ---- clusters: the nodes GPUs are trained on --------------------------------------------------------------


@dataclass(frozen=True)
class ClusterSpec:
    """One kind of GPU node, as its datasheet states it, with the bus bandwidths NCCL is measured to reach on it.

    Bandwidths are bytes/s **per direction**: NVIDIA quotes NVLink as the bidirectional total per GPU (H100:
    "900 GB/s") and NICs in Gb/s per port, one direction (ConnectX-7: 400 Gb/s = 50 GB/s). A collective's bus
    bandwidth is limited by what one GPU sends, so the per-direction figure is the one that counts.

    The link rate is not what a collective gets: nccl-tests' bus bandwidth (`busbw`, PERFORMANCE.md) on the real
    machine is about 80% of NVLink's rate (protocol overhead) and 92-96% of a NIC's. `ring_busbw_bytes_per_s`,
    `nvls_busbw_bytes_per_s` and `nic_busbw_bytes_per_s` are those measured figures, `measured` says where each was
    read; lecture2.network and lecture2.planning.collectives time collectives with them."""

    name: str
    full_name: str
    gpu: str  # a key of GPUS
    gpus_per_node: int
    nvlink_bytes_per_s: float  # per GPU, one direction, through the NVSwitch fabric (datasheet)
    nics_per_node: int  # compute-fabric NICs (storage/management ports not counted)
    nic_bytes_per_s: float  # per NIC, one direction (datasheet)
    source: str
    ring_busbw_bytes_per_s: float = 0.0  # nccl-tests busbw of a ring collective inside one node (measured)
    nvls_busbw_bytes_per_s: float = 0.0  # nccl-tests busbw of an NVLink SHARP all-reduce in one node; 0: no NVLS
    nic_busbw_bytes_per_s: float = 0.0  # what one NIC carries in an inter-node ring (measured per NIC)
    measured: str = ""

    @property
    def nic_bytes_per_s_per_gpu(self) -> float:
        """The compute fabric's bandwidth one GPU gets when every GPU of the node sends at once (rail-aligned)."""
        return self.nics_per_node * self.nic_bytes_per_s / self.gpus_per_node

    @property
    def nic_busbw_per_gpu(self) -> float:
        """The measured counterpart of `nic_bytes_per_s_per_gpu`: NICs x measured busbw per NIC / GPUs per node."""
        return self.nics_per_node * self.nic_busbw_bytes_per_s / self.gpus_per_node

    @property
    def gpu_spec(self) -> GPUSpec:
        return GPUS[self.gpu]


def _node(name, full_name, gpu_name, gpus, nvlink_bidirectional_gbs, nics, nic_gbit, source, *, ring_busbw_gbs,
          nvls_busbw_gbs, nic_busbw_gbs, measured) -> ClusterSpec:
    return ClusterSpec(name, full_name, gpu_name, gpus, nvlink_bidirectional_gbs / 2 * GB, nics, nic_gbit / 8 * GB,
                       source, ring_busbw_gbs * GB, nvls_busbw_gbs * GB, nic_busbw_gbs * GB, measured)


# Measured bus bandwidths (nccl-tests busbw, large messages):
#   H100 NVLink: "450GB/s is the line rate. With the protocol overhead (~20%) NCCL can get an effective NVLink bandwidth
#     of 370GB/s ... running with NCCL_ALGO=RING"; NVLink SHARP all-reduce on 8 GPUs "a peak busBw of ~480GB/s (algbw
#     ~275GB/s)" (NCCL maintainer, NVIDIA/nccl-tests issue #212, 2024); 476 GB/s measured in nccl-tests #290 (2025).
#   NDR 400 Gb/s InfiniBand: "For NDR @ 400Gbps you should see 46-48GB/s per NIC" (NVIDIA, nccl-tests #290): 47.
#   A100 NVLink: 232.5 GB/s all-reduce busbw on one 8 x A100 SXM4 node (nccl-tests issue #175, 2023), 78% of 300.
#   HDR 200 Gb/s: not measured here; NDR's measured 94% of the link rate, 23.5 of 25 GB/s.
#   H800 NVLink (400 GB/s bidirectional): "NVLink offers a bandwidth of 160 GB/s" (DeepSeek-V3 technical report,
#     §3.2.2), and an NVLS all-reduce busBW of 215 GB/s on 8 x H800 (NVIDIA/nccl issue #1374, 2024).
#   B200 NVLink 5: not measured here; H100's measured 82% of the line rate (740 of 900 GB/s), NVLS as H100's ratio.
_H100_NET = "nccl-tests #212 (NVLink ring 370, NVLS 480 GB/s), #290 (NDR 47 GB/s per NIC)"
# fmt: off
CLUSTERS: dict[str, ClusterSpec] = {c.name: c for c in [
    # NVIDIA DGX A100 datasheet: 8x A100 SXM4 80GB, NVLink 3 600 GB/s per GPU (bidirectional) through 6 NVSwitches,
    # 8x single-port ConnectX-6 HDR 200 Gb/s InfiniBand for the compute fabric (+ 2 dual-port for storage).
    # Selene (Megatron-LM's and MT-NLG's cluster) is built of these nodes.
    _node("dgx-a100", "NVIDIA DGX A100 (8 GPUs)", "a100", 8, 600, 8, 200, "NVIDIA DGX A100 datasheet",
          ring_busbw_gbs=232.5, nvls_busbw_gbs=0, nic_busbw_gbs=23.5,
          measured="nccl-tests #175 (A100 NVLink 232.5 GB/s); HDR at NDR's measured 94%"),
    # The DGX A100 40GB variant of the same datasheet: 8x A100 SXM4 40GB, the same NVLink and NICs.
    _node("dgx-a100-40gb", "NVIDIA DGX A100 40GB (8 GPUs)", "a100-40gb", 8, 600, 8, 200,
          "NVIDIA DGX A100 datasheet (40GB system)", ring_busbw_gbs=232.5, nvls_busbw_gbs=0, nic_busbw_gbs=23.5,
          measured="nccl-tests #175 (A100 NVLink 232.5 GB/s); HDR at NDR's measured 94%"),
    # NVIDIA DGX H100 datasheet: 8x H100 SXM5 80GB, NVLink 4 900 GB/s per GPU (18 links x 50 GB/s, bidirectional)
    # through 4 NVSwitches, 8x ConnectX-7 400 Gb/s (4 OSFP ports, one NIC per GPU) for the compute fabric.
    _node("dgx-h100", "NVIDIA DGX H100 (8 GPUs)", "h100-sxm", 8, 900, 8, 400, "NVIDIA DGX H100 datasheet",
          ring_busbw_gbs=370, nvls_busbw_gbs=480, nic_busbw_gbs=47, measured=_H100_NET),
    # NVIDIA DGX H200 datasheet: the DGX H100's NVLink and ConnectX-7 fabric with H200 GPUs (141 GB HBM3e).
    _node("dgx-h200", "NVIDIA DGX H200 (8 GPUs)", "h200", 8, 900, 8, 400, "NVIDIA DGX H200 datasheet",
          ring_busbw_gbs=370, nvls_busbw_gbs=475, nic_busbw_gbs=47,
          measured="nccl-tests #272 (8 x H200 NVLS all-reduce 475 GB/s); #212, #290 as the H100's"),
    # An HGX H800 node as DeepSeek-V3 describes its cluster (technical report §3.1): 8 GPUs on NVLink/NVSwitch
    # (400 GB/s bidirectional per GPU), InfiniBand between nodes, one 400 Gb/s ConnectX-7 per GPU ("IB (50 GB/s)").
    _node("hgx-h800", "NVIDIA HGX H800 (8 GPUs)", "h800", 8, 400, 8, 400,
          "DeepSeek-V3 technical report §3.1-3.2; NVIDIA H800 product brief", ring_busbw_gbs=160, nvls_busbw_gbs=215,
          nic_busbw_gbs=47, measured="DeepSeek-V3 §3.2.2 (NVLink 160 GB/s), NVIDIA/nccl #1374 (NVLS 215 GB/s), #290"),
    # Jean Zay's A100 partition, where BLOOM trained (BigScience 2022, BLOOM paper §3.4.1): 8 A100 80GB per node on
    # NVLink (taken as an HGX A100 board's NVSwitch, the DGX A100's 600 GB/s), four Omni-Path 100 Gb/s links per node.
    # Not measured here: the DGX A100's measured fractions (NVLink 232.5 of 300; a NIC at 94% of its rate).
    _node("jean-zay-a100", "Jean Zay A100 80GB node (8 GPUs, 4 x Omni-Path 100 Gb/s)", "a100", 8, 600, 4, 100,
          "BLOOM paper (BigScience 2022), §3.4.1: 48 nodes of 8 A100 80GB, NVLink, 4 x Omni-Path 100 Gbps per node",
          ring_busbw_gbs=232.5, nvls_busbw_gbs=0, nic_busbw_gbs=11.75,
          measured="not measured: DGX A100's NVLink busbw (nccl-tests #175); Omni-Path at NDR's measured 94%"),
    # NVIDIA DGX B200 datasheet: 8x B200, NVLink 5 1.8 TB/s per GPU (bidirectional), 8x ConnectX-7 400 Gb/s.
    _node("dgx-b200", "NVIDIA DGX B200 (8 GPUs)", "b200", 8, 1800, 8, 400, "NVIDIA DGX B200 datasheet",
          ring_busbw_gbs=740, nvls_busbw_gbs=960, nic_busbw_gbs=47,
          measured="not measured here: H100's measured fractions of the line rate (82% ring, NVLS 480/450)"),
]}
# fmt: on


def known_clusters() -> list[str]:
    """The names `cluster()` accepts."""
    return list(CLUSTERS)


def cluster(name: str) -> ClusterSpec:
    """The cluster row for `name` (case-insensitive, e.g. "dgx-h100"); unknown names list the known ones."""
    if not isinstance(name, str):
        raise TypeError(f"cluster 名称应是字符串 (str), 得到 {type(name).__name__}; known: {', '.join(CLUSTERS)}")
    key = name.strip().lower().replace("_", "-").replace(" ", "-")
    if key not in CLUSTERS:
        raise UnknownGPU(f"未知的 cluster {name!r}; known clusters: {', '.join(CLUSTERS)}")
    return CLUSTERS[key]
