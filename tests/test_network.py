"""lecture2.network: NCCL's bus bandwidth and latency model of a collective on a cluster, and the α-β fit."""
import math

import pytest

from lecture2 import hardware, network

DGX = hardware.cluster("dgx-h100")


@pytest.mark.parametrize("op, n, factor", [("all_reduce", 2, 1.0), ("all_reduce", 256, 2 * 255 / 256),
                                           ("all_gather", 4, 0.75), ("reduce_scatter", 8, 7 / 8),
                                           ("broadcast", 8, 1.0), ("all_reduce", 1, 0.0)])
def test_bus_factor_is_what_a_ring_rank_sends(op, n, factor):
    """Is the bus-bandwidth factor nccl-tests' 2(n-1)/n, (n-1)/n, 1 (and 0 for one rank)?"""
    assert network.bus_factor(op, n) == pytest.approx(factor, rel=1e-12)


def test_a_node_sees_nvlink_and_nodes_see_their_nics():
    """Issue 27, finding 3: bus bandwidth is what nccl-tests measures, not the link rate. Inside a DGX H100 NVLink's
    ring reaches 370 GB/s (of 450 per direction); across nodes min(that, ranks per node x 47 GB/s measured per NIC):
    370 GB/s with 8 ranks per node, 188 with 4, one NIC's 47 with 1; A100's 8 HDR NICs give 8 x 23.5."""
    assert network.link(DGX, 8).bus_bytes_per_s == 370e9
    assert network.link(DGX, 256, 8).bus_bytes_per_s == 370e9
    assert network.link(DGX, 256, 4).bus_bytes_per_s == 188e9
    assert network.link(DGX, 32, 1).bus_bytes_per_s == 47e9
    assert network.link(hardware.cluster("dgx-a100"), 64, 8).bus_bytes_per_s == 188e9
    assert network.link(DGX, 8).bus_bytes_per_s < DGX.nvlink_bytes_per_s


def test_the_zero3_step_of_the_lecture_on_eight_nics():
    """Does ZeRO-3's 41.8 GB per GPU per step (7B in bf16, 256 GPUs) take about 0.11 s of bandwidth at the measured
    370 GB/s, not the 0.84 s of one NIC at its line rate?"""
    lk = network.link(DGX, 256, 8)
    seconds = (network.collective_seconds("all_gather", 14e9, lk, 2) + network.collective_seconds("reduce_scatter", 14e9, lk)
               - 3 * network.latency_seconds("all_gather", lk))
    assert seconds == pytest.approx(3 * 255 / 256 * 14e9 / 370e9, rel=1e-12)
    assert 0.10 < seconds < 0.12


def test_latency_follows_nccls_ring_model():
    """Is a ring's latency 8.4 us + 3.4 us per step inside a node + 14 us per step across (NCCL 2.23's tuning.cc),
    with an all-reduce's 2(n-1) steps of which 2(nodes-1) cross, and the 1.4 plateau for large multi-node ones on
    Ampere and newer (finding 3: the old 1.9 was NCCL's Volta figure, and every NCCL's before 2.19)?"""
    inside = network.link(DGX, 8)
    assert network.latency_seconds("all_gather", inside) == pytest.approx(8.4e-6 + 7 * 3.4e-6)
    across = network.link(DGX, 16, 8)
    small = network.latency_seconds("all_reduce", across, 1024)
    assert small == pytest.approx(8.4e-6 + (30 - 2) * 3.4e-6 + 2 * 14e-6)
    assert network.latency_seconds("all_reduce", across, 2**30) == pytest.approx(1.4 * small)
    assert network.collective_seconds("all_reduce", 1e9, network.link(DGX, 1)) == 0.0
    assert network.NCCL_VERSION == "2.23.4"


def test_hierarchical_pays_three_phases_and_the_flat_ring_pipelines_them():
    """Is the three-phase all-reduce (inside, across, inside) slower in bandwidth than NCCL's flat ring?"""
    flat = network.collective_seconds("all_reduce", 14e9, network.link(DGX, 256, 8))
    tiers = network.hierarchical_all_reduce_seconds(14e9, DGX, 256, 8)
    inside = network.link(DGX, 8, 8)
    expected = (2 * network.collective_seconds("reduce_scatter", 14e9, inside)
                + network.collective_seconds("all_reduce", 14e9 / 8,
                                             network.Link(32, 47e9, network.NCCL_BASE_LATENCY_S, 32, 0.0,
                                                          network.NCCL_NET_STEP_S, network.NCCL_RING_PLATEAU)))
    assert tiers == pytest.approx(expected, rel=1e-12)
    assert flat < tiers


def test_fit_recovers_latency_and_bandwidth():
    """From two exact (size, time) points of alpha + S f / B, does fit return alpha and B and predict a third?"""
    alpha, bus, f = 50e-6, 2e9, network.bus_factor("all_reduce", 4)
    t = lambda s: alpha + s * f / bus  # noqa: E731
    fit = network.fit("all_reduce", 4, (1e5, 1e7), (t(1e5), t(1e7)))
    assert fit.latency_s == pytest.approx(alpha, rel=1e-9) and fit.bus_bytes_per_s == pytest.approx(bus, rel=1e-9)
    assert fit.predict(3e6) == pytest.approx(t(3e6), rel=1e-12)
    assert network.collective_seconds("all_reduce", 3e6, fit.as_link()) == pytest.approx(t(3e6), rel=1e-12)


@pytest.mark.parametrize("call", [
    lambda: network.fit("all_reduce", 2, (1e6, 1e5), (1.0, 2.0)),
    lambda: network.fit("all_reduce", 2, (1e5, 1e6), (2.0, 1.0)),
    lambda: network.bus_factor("all_to_all", 4),
    lambda: network.link(DGX, 12, 8),
    lambda: network.link(DGX, 16, 16),
    lambda: network.collective_seconds("all_gather", -1, network.link(DGX, 8)),
    lambda: network.Link(2, 0.0, 0.0),
])
def test_bad_input_is_refused(call):
    """Do noise (the larger message not slower), unknown ops, layouts that do not tile nodes and bad numbers raise?"""
    with pytest.raises(ValueError):
        call()


def test_every_cluster_row_has_a_datasheet_and_a_gpu_row():
    """Does each cluster name its datasheet, a GPU of the peak table, NICs slower per GPU than NVLink, and measured
    bus bandwidths below the link rates with where they were read?"""
    for c in hardware.CLUSTERS.values():
        assert c.source and c.gpu in hardware.GPUS and c.gpus_per_node == 8 and c.measured
        assert 0 < c.nic_bytes_per_s_per_gpu < c.nvlink_bytes_per_s
        assert 0 < c.ring_busbw_bytes_per_s < c.nvlink_bytes_per_s and 0 < c.nic_busbw_bytes_per_s < c.nic_bytes_per_s
        assert math.isclose(c.nic_bytes_per_s * c.nics_per_node / c.gpus_per_node, c.nic_bytes_per_s_per_gpu)


@pytest.mark.parametrize("cluster", ["dgx-h100", "dgx-a100"])
@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "reduce_scatter"])
@pytest.mark.parametrize("ranks, per_node", [(8, 8), (16, 8), (32, 1)])
@pytest.mark.parametrize("per_rank", [2048, 2**20])
def test_the_notebooks_ring_is_the_planners_ring(cluster, op, ranks, per_node, per_rank):
    """Issue 42, finding 8: is notebook 10's ring (lecture2.network) the planner's ring with NCCL's Simple protocol
    (lecture2.planning.collectives) for every op, group and size, the large-message "plateau" included? The two used
    to state the constants twice and start the plateau at 4,096·n and 1,024·n bytes: at 2,048 bytes per rank over
    two nodes they disagreed by 40% of the latency."""
    from lecture2.planning import collectives

    c = hardware.cluster(cluster)
    nbytes = float(per_rank * ranks)
    ring = network.collective_seconds(op, nbytes, network.link(c, ranks, per_node))
    planner = collectives.ring_seconds(op, nbytes, collectives.group(c, ranks, per_node))
    assert ring == pytest.approx(planner, rel=1e-12)
