"""lecture2.hardware: the peak table, name lookup, dtype keys, device detection, the CPU's measured peak."""

import pytest
import torch

from lecture2 import hardware


def test_table_covers_the_gpus_the_course_names():
    """Does the table hold every GPU the course discusses, each with a source and a bf16 or fp16 peak?"""
    for name in ["v100", "a100", "h100-sxm", "h100-pcie", "h200", "b200", "l4", "l40s", "rtx4090", "mi300x"]:
        spec = hardware.gpu(name)
        assert spec.source and spec.memory_source and spec.memory_bytes > 0 and spec.bandwidth_bytes_per_s > 0
        assert spec.peak["fp16"] >= spec.peak["fp32"]


def test_memory_is_what_the_device_reports():
    """Is memory stored as the device reports it (nvidia-smi's MiB), not the box's "GB" read as 10**9 bytes?"""
    assert hardware.gpu("a100").memory_bytes == 81_920 * 2**20 == 80 * 2**30   # "80GB" is 80 GiB
    assert hardware.gpu("h200").memory_bytes == 143_771 * 2**20                 # "141GB": 140.4 GiB
    assert 140.3 < hardware.gpu("h200").memory_bytes / 2**30 < 140.5
    for spec in hardware.GPUS.values():
        assert isinstance(spec.memory_bytes, int) and spec.memory_bytes % 2**20 == 0  # whole MiB, as reported
        label_gb = int(spec.full_name.rsplit(" ", 1)[-1].removesuffix("GB"))
        # the name's "GB" read as 10**9 bytes undercounts every one of them, read as 2**30 it never undercounts
        assert label_gb * 10**9 < spec.memory_bytes <= label_gb * 2**30, spec.name


def test_datasheet_values_the_lecture_uses():
    """Are the A100 and H100 SXM bf16 dense peaks 312 and 989.4 TFLOP/s (not the sparse 1979)?"""
    assert hardware.gpu("a100").peak_flops(torch.bfloat16) == 312e12
    assert hardware.gpu("h100-sxm").peak_flops("bf16") == pytest.approx(989.4e12)
    assert hardware.gpu("H100_SXM").peak_flops(torch.float8_e4m3fn) == pytest.approx(1978.9e12)


def test_unknown_gpu_lists_the_known_ones():
    """Is an unknown GPU name answered with a message that lists every known name?"""
    with pytest.raises(hardware.UnknownGPU) as err:
        hardware.gpu("tpu-v5")
    for name in hardware.known_gpus():
        assert name in str(err.value)
    with pytest.raises(TypeError):
        hardware.gpu(100)


def test_missing_dtype_says_what_is_supported():
    """Does asking V100 for bf16 say that it has no such peak and list what it has?"""
    with pytest.raises(ValueError, match="fp32, fp16"):
        hardware.gpu("v100").peak_flops(torch.bfloat16)


@pytest.mark.parametrize("device_name, key", [
    ("NVIDIA H100 80GB HBM3", "h100-sxm"), ("NVIDIA H100 PCIe", "h100-pcie"), ("NVIDIA H200", "h200"),
    ("NVIDIA A100-SXM4-80GB", "a100"), ("NVIDIA L4", "l4"), ("NVIDIA L40S", "l40s"),
    ("NVIDIA GeForce RTX 4090", "rtx4090"), ("Tesla V100-SXM2-32GB", "v100"), ("NVIDIA B200", "b200"),
    ("AMD Instinct MI300X", "mi300x"), ("NVIDIA A100 80GB PCIe", "a100"), ("nvidia l40s", "l40s"),
    ("NVIDIA A100-SXM4-40GB", "a100-40gb"), ("NVIDIA H800", "h800")])
def test_cuda_device_names_map_to_rows(device_name, key):
    """Does each name torch.cuda.get_device_name() reports find its row?"""
    assert hardware.gpu_from_device_name(device_name).name == key


def test_unknown_device_name_is_explained():
    with pytest.raises(hardware.UnknownGPU, match="known GPUs"):
        hardware.gpu_from_device_name("NVIDIA GeForce GTX 1080")
    with pytest.raises(TypeError):
        hardware.gpu_from_device_name(None)


@pytest.mark.parametrize("device_name", ["NVIDIA L40", "NVIDIA H100 NVL", "NVIDIA H200 NVL",
                                         "Tesla V100-SXM2-16GB", "NVIDIA L400"])
def test_a_name_is_matched_by_whole_words_not_by_a_prefix(device_name):
    """Is an "L40" refused rather than read as an "L4" (and other variants with their own datasheets or less
    memory refused rather than given a neighbour's row)?"""
    with pytest.raises(hardware.UnknownGPU, match="not in the peak table"):
        hardware.gpu_from_device_name(device_name)


def test_dtype_keys():
    """Are torch dtypes and names mapped onto the table's columns, and bad ones refused clearly?"""
    assert hardware.dtype_key(torch.float32) == "fp32"
    assert hardware.dtype_key("bfloat16") == "bf16"
    assert hardware.dtype_key("TF32") == "tf32"
    with pytest.raises(ValueError, match="unknown dtype"):
        hardware.dtype_key("fp64x")
    with pytest.raises(ValueError):
        hardware.dtype_key(torch.int8)
    with pytest.raises(TypeError):
        hardware.dtype_key(32)


def test_detect_device_names_a_real_device():
    assert hardware.detect_device() in {"cuda", "mps", "cpu"}
    if not torch.cuda.is_available():
        assert hardware.detect_device() != "cuda"


def _fake_clock(durations):
    """A time.perf_counter for measure_cpu_peak: the first read starts the sweep, then each timed call reads the clock
    twice and lasts the next of `durations` seconds (0 once they run out)."""
    durations, now, reads = iter(durations), [0.0], [0]

    def clock():
        reads[0] += 1
        if reads[0] > 1 and reads[0] % 2 == 1:  # the read that ends a timed call
            now[0] += next(durations, 0.0)
        return now[0]

    return clock


def test_cpu_peak_is_the_best_call_of_the_best_size(monkeypatch):
    """With a fake clock, is the peak 2·n³ over the fastest call, at the size whose fastest call is fastest per FLOP,
    and does the sweep stop after the first size whose best call takes max_call_seconds?

    Catches a missing 2 of multiply-add, ms for s, the median or the last size instead of the best: exact, no noise."""
    # n=32: calls of 0.5, 0.25, 1.0 s -> best 2·32³/0.25; n=64: 2.0, 1.0, 4.0 s -> 2·64³/1.0, the best per FLOP;
    # n=128 is never timed: n=64's best call (1.0 s) reached max_call_seconds
    monkeypatch.setattr(hardware.cpu.time, "perf_counter", _fake_clock([0.5, 0.25, 1.0, 2.0, 1.0, 4.0]))
    peak = hardware.measure_cpu_peak(torch.float32, threads=1, sizes=(32, 64, 128), repeat=3, warmup=1,
                                     max_call_seconds=1.0)
    assert peak.sweep == ((32, 2 * 32**3 / 0.25), (64, 2 * 64**3 / 1.0))
    assert (peak.n, peak.flops_per_s, peak.dtype, peak.clock) == (64, 2 * 64**3 / 1.0, "fp32", "wall clock")
    assert peak.samples == (2 * 64**3 / 2.0, 2 * 64**3 / 1.0, 2 * 64**3 / 4.0) and peak.high == peak.flops_per_s


def test_cpu_peak_record_best_sweep_spread_threads():
    """Does the record report its best, the sweep it came from, the spread of its calls and its thread count, and
    does a live sweep restore torch's thread count?"""
    p = hardware.CPUPeak(5.0, (1.0, 2.0, 3.0, 4.0, 5.0), 64, "fp32", 1, 0.1, ((32, 2.0), (64, 5.0)))
    assert (p.low, p.high) == (1.0, 5.0) and p.spread == pytest.approx((4.0 - 2.0) / 3.0)
    assert "best of a matmul sweep n=32…64, at n=64; 1 thread, wall clock)" in p.describe()
    before = torch.get_num_threads()
    live = hardware.measure_cpu_peak(torch.float32, threads=1, sizes=(64, 128), repeat=3)
    assert live.threads == 1 and torch.get_num_threads() == before  # pinned for the measurement, then restored
    assert live.flops_per_s == max(live.samples) == max(f for _, f in live.sweep) and live.n in (64, 128)


def test_cpu_peak_agrees_with_an_independent_timer():
    """Is the measured peak what torch.utils.benchmark.Timer's fastest block measures for the same matmul and thread?

    Basis for 0.5-2x: both are the fastest of repeated calls of the same fp32 matmul on one thread, by the wall
    clock, in one process; on the shared 2-core machine a best-of-5 has been seen 30% slow under load, and a miss is
    measured again (up to 3 times: noise rarely strikes three times running). The exact formula is the fake-clock
    test's job; this one fails a number that is not a measurement of this machine's matmul (a unit slip; the wrong
    operation, size or thread count timed)."""
    from torch.utils import benchmark as torch_benchmark

    ratios = []
    for _ in range(3):
        peak = hardware.measure_cpu_peak(torch.float32, threads=1, sizes=(256, 512))
        n = peak.n
        a, b = torch.randn(n, n), torch.randn(n, n)
        timer = torch_benchmark.Timer("a @ b", globals={"a": a, "b": b}, num_threads=1)
        independent = 2 * n**3 / min(timer.blocked_autorange(min_run_time=0.2).times)
        ratios.append(peak.flops_per_s / independent)
        if 0.5 < ratios[-1] < 2:
            return
    pytest.fail(f"cpu peak / Timer's best: {ratios}, outside 0.5..2")


def test_cpu_roof_is_measured_once_per_process_thread_count_and_dtype(monkeypatch):
    """Do cpu_peak, cpu_bandwidth, roof and peak_flops on CPU measure once per dtype and thread count, then reuse that
    one record; does each dtype get its own peak, and training_peak the higher one?"""
    calls = []

    def fake_peak(dtype, threads):
        calls.append((dtype, threads))
        return hardware.CPUPeak({torch.float32: 1e9, torch.bfloat16: 3e9}[dtype], (1e9,), 64, "fp32", threads, 0.0)

    monkeypatch.setattr(hardware.cpu, "measure_cpu_peak", fake_peak)
    monkeypatch.setattr(hardware.cpu, "measure_cpu_bandwidth",
                        lambda threads: hardware.CPUBandwidth(2e9, {"add": 2e9}, 2**26, threads, 0.0))
    hardware.cpu._cached_cpu_peak.cache_clear()
    hardware.cpu._cached_cpu_bandwidth.cache_clear()
    try:
        first = hardware.cpu_peak(torch.float32, threads=1)
        assert hardware.cpu_peak(torch.float32, threads=1) is first
        with monkeypatch.context() as m:
            m.setattr(torch, "get_num_threads", lambda: 1)
            assert hardware.peak_flops(torch.float32, device="cpu") == first.flops_per_s == 1e9
            assert hardware.peak_flops("tf32", device="cpu") == 1e9  # tf32 is fp32 on a CPU
            bf16 = hardware.roof("bf16", "cpu")
            assert (bf16.peak_flops_per_s, bf16.bandwidth_bytes_per_s, bf16.ridge) == (3e9, 2e9, 1.5)
            assert bf16.attainable(0.5) == 1e9 and bf16.attainable(10) == 3e9 and "measured here" in bf16.source
            assert hardware.training_peak("cpu") == ("bf16", 3e9)
        assert hardware.cpu_peak(torch.float32, threads=2).threads == 2  # another thread count: measured anew
        assert calls == [(torch.float32, 1), (torch.bfloat16, 1), (torch.float32, 2)]
    finally:
        hardware.cpu._cached_cpu_peak.cache_clear()
        hardware.cpu._cached_cpu_bandwidth.cache_clear()


def test_stream_bandwidth_counts_what_each_kernel_reads_and_writes(monkeypatch):
    """With a fake clock (every pass 0.5 s), does each kernel count 8 (copy, scale) or 12 (add, triad) bytes an
    element, and is the bandwidth the best kernel's?"""
    monkeypatch.setattr(hardware.cpu.time, "perf_counter", _fake_clock([0.5] * 100))
    bw = hardware.measure_cpu_bandwidth(threads=1, n_bytes=4096, repeat=2)
    assert bw.kernels == {"copy": 8 * 1024 / 0.5, "scale": 8 * 1024 / 0.5, "add": 12 * 1024 / 0.5,
                          "triad": 12 * 1024 / 0.5}
    assert bw.bytes_per_s == 12 * 1024 / 0.5 and "1 thread" in bw.describe()


def test_the_peak_table_prints_the_datasheet_rows():
    table = hardware.peak_table(("a100", "h100-sxm"))
    assert "989.4" in table and "494.7" in table and "156.0" in table and "tf32" in table.splitlines()[0]


def test_cpu_peak_refuses_bad_input():
    with pytest.raises(ValueError, match="fp8"):
        hardware.peak_flops("fp8", device="cpu")
    with pytest.raises(TypeError):
        hardware.measure_cpu_peak("float32")
    with pytest.raises(TypeError):
        hardware.cpu_peak("float32")
    with pytest.raises(ValueError, match="threads"):
        hardware.measure_cpu_peak(torch.float32, threads=0)
    with pytest.raises(ValueError, match="fp32/bf16/fp16"):
        hardware.measure_cpu_peak(torch.float64)


@pytest.mark.gpu
def test_cuda_peak_comes_from_the_datasheet():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    spec = hardware.gpu_from_device_name(torch.cuda.get_device_name())
    assert hardware.peak_flops(torch.bfloat16) == spec.peak_flops(torch.bfloat16)
    tf32 = hardware.roof("tf32", "cuda")
    assert tf32.peak_flops_per_s == spec.peak["tf32"] and tf32.bandwidth_bytes_per_s == spec.bandwidth_bytes_per_s
    assert hardware.training_peak("cuda") == ("bf16", spec.peak["bf16"])


@pytest.mark.gpu
def test_cuda_memory_is_the_tables_less_the_driver_reserve():
    """Does the present GPU's row hold what the device reports? torch's total_memory is nvidia-smi's total less
    what the driver reserves (616 MiB on the course's H200), so it lies within 1 GiB below the table's figure."""
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    spec = hardware.gpu_from_device_name(torch.cuda.get_device_name())
    total = torch.cuda.get_device_properties(0).total_memory
    assert 0 <= spec.memory_bytes - total < 2**30


def test_cluster_rows_from_their_datasheets():
    """Do the DGX rows state NVLink per direction (H100: 900 GB/s bidirectional = 450) and 8 NICs of 400 Gb/s (50 GB/s),
    each with its datasheet, and is every existing GPU row still there?"""
    h100 = hardware.cluster("dgx-h100")
    assert (h100.gpus_per_node, h100.nvlink_bytes_per_s, h100.nics_per_node, h100.nic_bytes_per_s) == (8, 450e9, 8, 50e9)
    assert hardware.cluster("DGX_A100").nic_bytes_per_s == 25e9 and hardware.cluster("dgx-b200").nvlink_bytes_per_s == 900e9
    assert all(c.source.startswith(("NVIDIA DGX", "DeepSeek-V3", "BLOOM paper")) for c in hardware.CLUSTERS.values())
    jean_zay = hardware.cluster("jean-zay-a100")  # BLOOM's nodes: 4 x Omni-Path 100 Gb/s per 8 A100
    assert (jean_zay.nics_per_node, jean_zay.nic_bytes_per_s, jean_zay.gpu) == (4, 12.5e9, "a100")
    assert hardware.cluster("hgx-h800").nvlink_bytes_per_s == 200e9 and hardware.gpu("h800").sms == 132
    assert hardware.gpu("a100-40gb").memory_bytes == 40 * 2**30 and hardware.gpu("a100-80gb") is hardware.gpu("a100")
    assert hardware.cluster("dgx-h200").gpu_spec is hardware.gpu("h200")
    assert set(hardware.known_gpus()) >= {"v100", "a100", "h100-sxm", "h100-pcie", "h200", "b200", "l4", "l40s",
                                          "rtx4090", "mi300x"}


def test_unknown_cluster_lists_the_known_ones():
    with pytest.raises(hardware.UnknownGPU) as err:
        hardware.cluster("tpu-pod")
    assert all(name in str(err.value) for name in hardware.known_clusters())
    with pytest.raises(TypeError):
        hardware.cluster(8)


def test_one_rule_decides_which_peak_applies():
    """hardware.applicable_peak is the one home of "which peak applies": peak_flops, roof, training_peak and both
    of the profile's sweeps read it (issue 43: the shipped CPU profile once divided by two different CPU peaks)."""
    from lecture2 import profile

    for key in ("fp32", "bf16"):
        peak = hardware.applicable_peak(key, "cpu")
        assert peak.dtype == key and peak.flops_per_s == hardware.cpu_peak(getattr(torch, {"fp32": "float32", "bf16": "bfloat16"}[key])).flops_per_s
        assert hardware.peak_flops(key, "cpu") == hardware.roof(key, "cpu").peak_flops_per_s == peak.flops_per_s
        matmul = profile.matmul_sweep("cpu", {key: [32]}, repeat=1)[key]
        gemm = profile.gemm_shape_sweep("cpu", {"dtypes": [key], "shapes": [[32, 16, 8]]}, repeat=1)[key]
        for swept in (matmul, gemm):
            assert (swept["peak_flops_per_s"], swept["peak_source"]) == (peak.flops_per_s, peak.source)
        assert [sorted(r) for r in gemm["shapes"]] == [sorted(["m", "n", "k", "seconds", "flops_per_s", "fraction_of_peak"])]
        assert sorted(matmul) == sorted(["sizes", "best_flops_per_s", "peak_flops_per_s", "peak_source"])
    key, flops = hardware.training_peak("cpu")
    assert flops == hardware.applicable_peak(key, "cpu").flops_per_s == max(
        hardware.applicable_peak(k, "cpu").flops_per_s for k in ("fp32", "bf16"))
    assert profile.matmul_sweep("cpu", {"tf32": [32]}, repeat=1)["tf32"] == {
        "skipped": "ValueError: tf32 is a CUDA tensor-core mode"}
