"""A planned step: its parts, what it reaches (MFU, HFU, TFLOP/s per GPU), what it costs, and how it prints."""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import estimate
from .layout import Layout, Run
from .shapes import ModelShape

__all__ = ["Plan"]


@dataclass
class Plan:
    """What `plan` found: every number in bytes, seconds, FLOPs, per GPU unless said; `report()` prints it.

    MFU counts model FLOPs (6 x matmul parameters + causal attention per token, no recomputation) over the GPUs'
    dense BF16 peak; HFU the FLOPs the kernels execute (recomputation included; an explicit attention's whole T x T
    square); `tflops_per_gpu` is model FLOPs per second per GPU, what Llama 3's Table 4 reports."""

    model: ModelShape
    run: Run
    layout: Layout
    dp: int
    micro_batches: int
    memory: dict[str, float]  # the GPU that needs the most: part -> bytes, and "total"
    memory_stage: str  # which pipeline stage needs the most ("1 of 16"), or "only"
    gpu_memory_bytes: float  # what the device reports, less the driver's reservation
    comm: dict[str, dict]  # kind -> {"bytes", "seconds", "exposed_s", "calls", "algorithm"}
    compute_parts: dict[str, float]  # seconds per step of the slowest stage: GEMMs, attention, memory-bound, ...
    bubble_s: float
    optimizer_s: float
    step_s: float
    model_flops_per_step: float
    hardware_flops_per_step: float
    peak_flops_per_gpu: float  # dense BF16
    notes: list[str] = field(default_factory=list)

    @property
    def compute_s(self) -> float:
        return sum(self.compute_parts.values())

    @property
    def fits(self) -> bool:
        return self.memory["total"] <= self.gpu_memory_bytes

    @property
    def mfu(self) -> float:
        return self.model_flops_per_step / (self.run.gpus * self.peak_flops_per_gpu * self.step_s)

    @property
    def hfu(self) -> float:
        return self.hardware_flops_per_step / (self.run.gpus * self.peak_flops_per_gpu * self.step_s)

    @property
    def tflops_per_gpu(self) -> float:
        """Model FLOPs per second per GPU, in TFLOP/s."""
        return self.model_flops_per_step / self.run.gpus / self.step_s / 1e12

    @property
    def tokens_per_s_per_gpu(self) -> float:
        return self.run.batch_tokens / self.step_s / self.run.gpus

    @property
    def gpu_hours_per_trillion_tokens(self) -> float:
        return 1e12 / self.tokens_per_s_per_gpu / 3600

    @property
    def steps(self) -> float:
        return self.run.tokens / self.run.batch_tokens

    @property
    def days(self) -> float:
        return self.steps * self.step_s / estimate.SECONDS_PER_DAY

    @property
    def cost_usd(self) -> float:
        return estimate.cost_usd(estimate.gpu_hours(self.steps * self.step_s, self.run.gpus), self.run.usd_per_gpu_hour)

    @property
    def exposed_comm_s(self) -> float:
        return sum(c["exposed_s"] for c in self.comm.values())

    def breakdown(self) -> dict[str, float]:
        """The step as a sum of named parts (seconds): compute, exposed communication by kind, bubble, optimizer."""
        parts = {f"compute: {k}": v for k, v in self.compute_parts.items()}
        parts.update({f"exposed {kind} communication": c["exposed_s"] for kind, c in self.comm.items()})
        parts["pipeline bubble"] = self.bubble_s
        parts["optimizer step"] = self.optimizer_s
        return parts

    def bottleneck(self) -> str:
        """What the step's time goes to beyond the kernels: the largest of the other parts."""
        parts = {k: v for k, v in self.breakdown().items() if not k.startswith("compute")}
        name, seconds = max(parts.items(), key=lambda kv: kv[1])
        if seconds < 0.05 * self.step_s:
            return f"compute: {self.compute_s / self.step_s:.0%} of the step is the kernels (nothing else over 5%)"
        return f"{name}: {seconds / self.step_s:.0%} of the step"

    def summary(self) -> str:
        return (f"{self.layout.describe()} (DP {self.dp}, {self.micro_batches} micro-batches): "
                f"{self.memory['total'] / 1e9:.1f} GB per GPU, step {self.step_s:.2f} s, MFU {self.mfu:.3f}, "
                f"{self.days:.1f} days, ${self.cost_usd:,.0f}")

    def report(self) -> str:
        """The plan in words and tables (what `python -m lecture2 estimate --model ...` prints)."""
        gb = lambda x: f"{x / 1e9:8.2f} GB"  # noqa: E731
        r, lay = self.run, self.layout
        lines = [f"{self.model.name} (N = {self.model.n_params:.4g}"
                 + (f", {self.model.n_active:.4g} active" if self.model.moe else "") + f") on {r.gpus} x {r.cluster} "
                 f"GPUs: {lay.describe()}, DP {self.dp}; {self.micro_batches} micro-batches of {lay.micro_batch} x "
                 f"{r.seq_len} tokens per step; GEMMs in {r.dtype}, attention by {r.attention_kernel}",
                 f"  memory per GPU (pipeline stage {self.memory_stage}, the fullest):" if lay.pp > 1
                 else "  memory per GPU:"]
        for part, nbytes in self.memory.items():
            if part != "total":
                lines.append(f"    {part:<56}{gb(nbytes)}")
        verdict = "fits" if self.fits else "does NOT fit"
        lines.append(f"    {'total':<56}{gb(self.memory['total'])}  of {self.gpu_memory_bytes / 1e9:.1f} GB usable: "
                     f"{verdict}")
        lines.append("  communication per GPU per step (NCCL's algorithm for the largest call):")
        for kind, c in self.comm.items():
            lines.append(f"    {kind:<4} {c['bytes'] / 1e9:9.2f} GB sent, {c['calls']:>7.0f} calls, {c['seconds']:7.3f} s "
                         f"on the wire, {c['exposed_s']:7.3f} s exposed  {c.get('algorithm', '')}")
        lines.append("  the step:")
        for part, seconds in self.breakdown().items():
            lines.append(f"    {part:<44}{seconds:9.3f} s {seconds / self.step_s:6.1%}")
        lines.append(f"    {'= step':<44}{self.step_s:9.3f} s")
        lines += [f"  MFU {self.mfu:.3f} (model FLOPs: 6 x matmul parameters + causal attention), HFU {self.hfu:.3f} "
                  f"(executed), {self.tflops_per_gpu:.0f} TFLOP/s per GPU of {self.peak_flops_per_gpu / 1e12:.1f} "
                  f"(dense BF16); {self.tokens_per_s_per_gpu:,.0f} tokens/s per GPU",
                  f"  {self.days:.2f} days for {r.tokens:.3g} tokens, ${self.cost_usd:,.0f} at ${r.usd_per_gpu_hour:g}"
                  f"/GPU-hour; {self.gpu_hours_per_trillion_tokens:,.0f} GPU-hours per trillion tokens",
                  f"  beyond the kernels the step goes to: {self.bottleneck()}"]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)

    def as_dict(self) -> dict:
        """Everything `--json` prints (plain data)."""
        return {"model": self.model.name, "n_params": self.model.n_params, "n_active": self.model.n_active,
                "layout": dict(self.layout.__dict__), "dp": self.dp, "micro_batches": self.micro_batches,
                "memory_per_gpu": self.memory, "memory_stage": self.memory_stage,
                "gpu_memory_bytes": self.gpu_memory_bytes, "fits": self.fits, "comm": self.comm,
                "breakdown_s": self.breakdown(), "compute_s": self.compute_s, "bubble_s": self.bubble_s,
                "optimizer_s": self.optimizer_s, "exposed_comm_s": self.exposed_comm_s, "step_s": self.step_s,
                "mfu": self.mfu, "hfu": self.hfu, "tflops_per_gpu": self.tflops_per_gpu,
                "tokens_per_s_per_gpu": self.tokens_per_s_per_gpu,
                "gpu_hours_per_trillion_tokens": self.gpu_hours_per_trillion_tokens,
                "model_flops_per_step": self.model_flops_per_step,
                "hardware_flops_per_step": self.hardware_flops_per_step, "days": self.days,
                "cost_usd": self.cost_usd, "bottleneck": self.bottleneck(), "notes": list(self.notes)}
