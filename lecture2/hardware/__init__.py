"""What a device can do: dense peak FLOP/s by GPU and dtype, memory, and which device is present.

One row per GPU, one source per row. Peaks are **dense** (no 2:4 structured sparsity: NVIDIA's headline
tensor figures are often the sparse ones, exactly 2x these). All figures are FLOP/s, memory in bytes,
bandwidth in bytes/s. On a CPU there is no datasheet worth trusting for PyTorch, so the roof that applies to a
dtype is measured on this machine, once per process: the best matmul of a sweep of sizes in that dtype (`cpu_peak`)
and STREAM's bandwidth (`cpu_bandwidth`), upper bounds of what the CPU reached. `applicable_peak(dtype, device)` is
the one rule for which peak applies, `roof(dtype, device)` adds the bandwidth; `training_peak(device)` the peak an
MFU ladder divides by.

Clusters (`CLUSTERS`, `cluster(name)`) are the nodes GPUs are trained on: GPUs per node, NVLink bandwidth per GPU,
NICs per node and their bandwidth, each row from its system's datasheet. `lecture2.network` turns a row into the
time of a collective (NCCL's bus bandwidth and latency model).

Memory is what the device itself reports (nvidia-smi's total, in MiB; rocm-smi's, in bytes), not the name on
the box, whose "GB" is neither 10**9 bytes nor always exactly 2**30: an A100 80GB reports 81,920 MiB = 80 GiB,
an H100 80GB 81,559 MiB, an L4 24GB 23,034 MiB and an H200 "141GB" 143,771 MiB = 140.4 GiB. Each row names
where its figure was read.
PyTorch's `torch.cuda.get_device_properties(0).total_memory` is a little smaller still: nvidia-smi's total
less what the driver reserves (616 MiB on the course's H200: 150,109,880,320 B = 139.8 GiB).

One name space, four rooms:
    gpus       the GPU table (GPUS, GPUSpec, gpu, gpu_from_device_name, dtype_key, DTYPES, peak_table)
    cpu        this CPU's measured matmul peak and bandwidth (cpu_peak, cpu_bandwidth, CPUPeak, CPUBandwidth)
    device     the device present and the peak and roof that apply on it (detect_device, applicable_peak, roof, ...)
    clusters   the nodes GPUs are trained on (CLUSTERS, ClusterSpec, cluster)
"""
from __future__ import annotations

from .clusters import CLUSTERS, ClusterSpec, cluster, known_clusters
from .cpu import CPUBandwidth, CPUPeak, cpu_bandwidth, cpu_peak, measure_cpu_bandwidth, measure_cpu_peak
from .device import (Peak, Roof, applicable_peak, detect_device, device_summary, matmul_works, peak_flops, roof,
                     training_peak)
from .gpus import DTYPES, GPUS, GPUSpec, UnknownGPU, dtype_key, gpu, gpu_from_device_name, known_gpus, peak_table

__all__ = [
    "CLUSTERS", "CPUBandwidth", "CPUPeak", "ClusterSpec", "DTYPES", "GPUS", "GPUSpec", "Peak", "Roof", "UnknownGPU",
    "applicable_peak", "cluster", "cpu_bandwidth", "cpu_peak", "detect_device", "dtype_key", "gpu",
    "gpu_from_device_name", "known_clusters", "known_gpus", "matmul_works", "measure_cpu_bandwidth",
    "measure_cpu_peak", "peak_flops", "peak_table", "roof", "training_peak", "device_summary",
]
