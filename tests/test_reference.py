"""lecture2.reference: the shipped profiles beside the student's run, with and without a GPU profile shipped."""
import copy
import json
from pathlib import Path

import matplotlib
import pytest
import torch

from lecture2 import profile, reference

matplotlib.use("Agg")
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def cpu_profile() -> dict:
    return profile.load(next(n for n in profile.shipped() if n.startswith("cpu-")))


def _fake_gpu(cpu: dict) -> dict:
    """A profile shaped like one from an H200 (built from the CPU one; for rendering tests only)."""
    p = copy.deepcopy(cpu)
    p["device"].update(device="cuda", name="NVIDIA H200", memory_bytes=150_000_000_000, datasheet="h200")
    p["made"]["command"] = "python -m lecture2 profile --out lecture2/profiles/h200.json"
    for m in p["matmul"].values():
        for r in m["sizes"]:
            r["flops_per_s"] *= 5000
            r["fraction_of_peak"] = 0.7
    p["matmul"]["fp8"] = {"skipped": "RuntimeError: test"}
    p["bandwidth"]["fraction_of_datasheet"] = 0.8
    p["models"]["block_activation_bytes"]["held_after_forward"] = p["models"]["block_activation_bytes"]["saved_bytes"] + 512
    s = p["models"]["gpt_state_bytes"]
    s.update(memory_allocated=s["held_total"] + 1024, held_on_device=s["held_total"] - 60, n_tensors=30)
    p["models"]["train_step"]["bf16_compiled"] = {"skipped": "RuntimeError: no compiler"}
    return p


@pytest.fixture
def cpu_only(tmp_path, monkeypatch, cpu_profile):
    """Only the CPU profile shipped (as before any GPU was measured), whatever lecture2/profiles/ holds now."""
    name = next(n for n in profile.shipped() if n.startswith("cpu-"))
    (tmp_path / f"{name}.json").write_text(json.dumps(cpu_profile))
    monkeypatch.setattr(profile, "PROFILES", tmp_path)
    return tmp_path


@pytest.fixture
def with_gpu_profile(tmp_path, monkeypatch, cpu_profile):
    """The shipped profiles plus a fake H200 one, in a temporary profiles folder."""
    for name in profile.shipped():
        (tmp_path / f"{name}.json").write_text(json.dumps(profile.load(name)))
    (tmp_path / "h200.json").write_text(json.dumps(_fake_gpu(cpu_profile)))
    monkeypatch.setattr(profile, "PROFILES", tmp_path)
    return tmp_path


@pytest.mark.parametrize("section", reference.SECTIONS)
def test_every_section_renders_yours_beside_the_shipped_cpu_profile(section, cpu_profile, cpu_only):
    """Does each table have a 'yours' column, the CPU profile's column and where it came from?"""
    text = reference.table(section, cpu_profile)
    header = text.splitlines()[0]
    assert header.split()[:2] == ["yours", next(n for n in profile.shipped() if n.startswith("cpu-"))]
    assert cpu_profile["made"]["command"] in text
    assert "datasheet" not in header  # a datasheet never stands in for a measurement (the H200's profile ships)


def test_rows_carry_the_measured_figures(cpu_profile, cpu_only):
    """Are the figures in the table the profile's own (formatted), not something recomputed?"""
    flops = reference.table("flops", cpu_profile)
    assert f"{cpu_profile['models']['gpt_train_flops']['counted']:.4g} counted (exact)" in flops
    memory = reference.table("memory", cpu_profile)
    assert f"{cpu_profile['models']['block_activation_bytes']['saved_bytes']:,} B" in memory
    assert "16N +60 B" in memory  # Adam's 4-byte step counters, one per parameter tensor
    ck = reference.table("checkpointing", cpu_profile)
    assert f"{cpu_profile['models']['checkpointing']['flops_overhead']:+.1%} FLOPs" in ck


def test_bf16_over_fp32_compares_the_same_sizes(cpu_profile, cpu_only):
    """Is bf16/fp32 taken at the sizes both dtypes ran (their geometric mean), not best against best, which on a
    CPU compares a large fp32 size with a small bf16 one?"""
    p = copy.deepcopy(cpu_profile)
    p["matmul"]["fp32"]["sizes"] = [{"n": 256, "flops_per_s": 10.0}, {"n": 512, "flops_per_s": 40.0},
                                    {"n": 1024, "flops_per_s": 1000.0}]
    p["matmul"]["bf16"]["sizes"] = [{"n": 128, "flops_per_s": 1.0}, {"n": 256, "flops_per_s": 20.0},
                                    {"n": 512, "flops_per_s": 20.0}]
    sizes, ratio = reference.bf16_over_fp32(p)
    assert sizes == [256, 512] and ratio == pytest.approx(1.0)  # 2x at 256, 0.5x at 512: geometric mean 1
    assert "1.00x (n=256, 512)" in reference.table("dtypes", p)
    p["matmul"]["bf16"] = {"skipped": "RuntimeError: test"}
    assert reference.bf16_over_fp32(p) is None


def test_a_gpu_profile_comes_first(with_gpu_profile, cpu_profile):
    """With a measured GPU profile shipped: is it the first reference, and no datasheet column?"""
    assert list(reference.references())[0] == "h200"
    assert list(reference.gpu_references()) == ["h200"]
    for section in reference.SECTIONS:
        text = reference.table(section, cpu_profile)
        header = text.splitlines()[0].split()
        assert header[:3] == ["yours", "h200", next(n for n in profile.shipped() if n.startswith("cpu-"))]
        assert "datasheet" not in text.splitlines()[0] and "no measured GPU profile" not in text
    mfu = reference.table("mfu", cpu_profile)
    assert "70% of datasheet" in mfu and "80% of datasheet" in mfu  # matmul and bandwidth against the sheet
    memory = reference.table("memory", cpu_profile)
    assert "(+0.02% vs saved)" in memory
    assert "(+1,084 B rounding)" in memory


def test_plots_show_the_shipped_profiles(cpu_profile, with_gpu_profile):
    """Does the dtype figure show measured bars only (no datasheet stands in), and the matmul plot add curves?"""
    import matplotlib.pyplot as plt

    fig = reference.plot_dtypes(cpu_profile)
    assert not any(p.get_hatch() for p in fig.axes[0].patches)  # a measured H200: no datasheet bars
    fig, ax = plt.subplots()
    reference.plot_matmul_references(ax)
    labels = [line.get_label() for line in ax.get_lines()]
    assert any("h200 (shipped profile)" in s for s in labels) and not any("datasheet" in s for s in labels)
    plt.close("all")


def test_an_older_profile_shows_gaps_not_a_traceback(cpu_profile):
    """A profile missing a section (an older schema) prints '-' in that row."""
    old = copy.deepcopy(cpu_profile)
    del old["models"]["checkpointing"]["flops_overhead"]
    del old["models"]["train_step"]
    text = reference.table("checkpointing", old) + reference.table("mfu", old)
    assert "of the bytes, +" in text


def test_bad_input_says_what_was_expected():
    with pytest.raises(ValueError, match="unknown section.*dtypes, flops"):
        reference.table("flop")
    with pytest.raises(TypeError, match="measure_here"):
        reference.table("flops", {"flops": 1})
    with pytest.raises(ValueError, match="'cpu' 或 'cuda'"):
        reference.measure_here("flops", device="mps")


def test_measured_here_counts_equal_the_shipped_cpu_profile(cpu_profile):
    """Run here at the shipped sizes: are the FLOPs and bytes identical to the shipped CPU profile's?"""
    if profile.config("cpu") != cpu_profile["config"]:
        pytest.fail("profile.config('cpu') changed: regenerate the shipped CPU profile "
                    "(python -m lecture2 profile --out lecture2/profiles/<name>.json)")
    mine = reference.measure_here("memory", device="cpu")
    for key in ("block_forward_flops", "block_activation_bytes", "gpt_train_flops", "gpt_state_bytes"):
        assert mine["models"][key] == cpu_profile["models"][key], key
    ck = reference.measure_here("checkpointing", device="cpu")["models"]["checkpointing"]
    for mode in ("plain", "per_block"):
        for key in ("saved_bytes", "flops"):
            assert ck[mode][key] == cpu_profile["models"]["checkpointing"][mode][key], (mode, key)


@pytest.mark.parametrize("name", ["01_tensors_dtypes", "05_flops", "06_memory", "07_checkpointing", "08_mfu_timing"])
def test_notebooks_show_the_references(name):
    """Do notebooks 01 and 05-08 measure a profile section here and print it beside the shipped ones?"""
    nb = json.loads((ROOT / "solutions" / "lec02" / f"{name}.ipynb").read_text(encoding="utf-8"))
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert "reference.measure_here(" in code and "reference.table(" in code


@pytest.mark.gpu
def test_cuda_sections_fill_the_allocator_rows():
    """On CUDA: do the memory and checkpointing tables carry the allocator's figures?"""
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    mine = reference.measure_here("memory", device="cuda")
    text = reference.table("memory", mine)
    assert "vs saved" in text and "rounding" in text
    ck = reference.measure_here("checkpointing", device="cuda")["models"]["checkpointing"]
    assert ck["per_block"]["peak_memory"] < ck["plain"]["peak_memory"]


def test_the_ladder_sets_issue_40s_h200_beside_yours_until_a_gpu_ladder_ships(cpu_profile, cpu_only, monkeypatch,
                                                                              tmp_path_factory):
    """While no shipped GPU profile holds a ladder: does the ladder table add issue 40's H200 measurement, marked as
    not this package's, and the figure hatch it? Once one does (a fake H200 built from the CPU profile), is it gone?"""
    import matplotlib.pyplot as plt

    text = reference.table("ladder", cpu_profile)
    assert reference.ISSUE_LADDER["name"] in text.splitlines()[0] and "MFU 41.7%" in text
    assert "not a profile of this package" in text
    fig = reference.plot_ladder(cpu_profile)
    assert any(p.get_hatch() for p in fig.axes[0].patches)
    plt.close("all")
    gpu_dir = tmp_path_factory.mktemp("gpu_ladder")
    fake = _fake_gpu(cpu_profile)
    fake["models"]["ladder"] = copy.deepcopy(cpu_profile["models"]["ladder"])
    (gpu_dir / "h200.json").write_text(json.dumps(fake))
    monkeypatch.setattr(profile, "PROFILES", gpu_dir)
    text = reference.table("ladder", cpu_profile)
    assert reference.ISSUE_LADDER["name"] not in text and "MFU" in text
    fig = reference.plot_ladder(cpu_profile)
    assert not any(p.get_hatch() for p in fig.axes[0].patches)
    plt.close("all")
