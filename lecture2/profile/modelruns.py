"""The course's models in the profile: FLOPs predicted vs counted, activation and training-state bytes predicted vs
measured, activation checkpointing's saving and overhead, and a training step's time and MFU."""
from __future__ import annotations

import torch
from torch.utils.checkpoint import checkpoint

from .. import measure, models, training_state
from .sweeps import _seconds


def _gpt(cfg: dict, device: str) -> tuple[models.GPT, torch.Tensor]:
    torch.manual_seed(0)
    gc = models.GPTConfig(**{k: v for k, v in cfg.items() if k not in ("B", "T")})
    model = models.GPT(gc).to(device)
    idx = torch.randint(0, gc.vocab_size, (cfg["B"], cfg["T"]), device=device)
    return model, idx


def _matmul_params(model: models.GPT) -> int:
    """Parameters that enter a matmul: the blocks' Linear weights and the LM head (embeddings are lookups)."""
    return sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))


def _gpt_flops_per_token(model: models.GPT, T: int) -> dict:
    """The lecture's 6N + 12 L d T per token (PaLM appendix B): N the matmul parameters, attention at length T."""
    c = model.config
    n = _matmul_params(model)
    return {"n_matmul_params": n, "six_n": 6 * n, "attention": 12 * c.n_layer * c.d_model * T,
            "total": 6 * n + 12 * c.n_layer * c.d_model * T}


def model_counts(cfg: dict, device: str = "cpu") -> dict:
    """Exact counts on lecture2's models: FLOPs, activation bytes, training-state bytes, predicted vs measured."""
    b = cfg["block"]
    B, T, d, H = b["B"], b["T"], b["d"], b["n_heads"]
    torch.manual_seed(0)
    block = models.TransformerBlock(d, H).to(device)
    x = torch.randn(B, T, d, device=device, requires_grad=True)
    counted = measure.count_flops(lambda: block(x))
    out: dict = {"block_forward_flops": {
        "formula": "24 B T d^2 + 4 B T^2 d", "predicted": 24 * B * T * d**2 + 4 * B * T**2 * d, "counted": counted}}

    saved = measure.saved_bytes(lambda: block(x), exclude=block.parameters())
    # the lecture's rough per-layer formula (§4.2): 20 B T d + 2 B T^2 bytes in bf16, here in fp32 (x2)
    rough = 2 * (20 * B * T * d + 2 * B * T * T)
    act = {"dtype": "fp32", "lecture_rough_predicted": rough, "saved_bytes": saved}
    if device == "cuda":
        act["peak_memory"] = measure.peak_memory(lambda: block(x))
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        y = block(x)
        torch.cuda.synchronize()
        # what the graph holds: allocated during the forward, less its output, plus the input it keeps
        # (norm1 saves x, which was allocated before); comparable with saved_bytes up to 512-byte rounding
        act["held_after_forward"] = (torch.cuda.memory_allocated() - before - y.untyped_storage().nbytes()
                                     + x.untyped_storage().nbytes())
        del y
    out["block_activation_bytes"] = act

    g = cfg["gpt"]
    if device == "cuda":
        torch.cuda.synchronize()
        baseline = torch.cuda.memory_allocated()
    model, idx = _gpt(g, device)
    per_token = _gpt_flops_per_token(model, g["T"])
    step_flops = measure.count_flops(lambda: model.loss(idx, idx).backward())
    out["gpt_train_flops"] = {"formula": "(6 N + 12 L d T) B T", "per_token_predicted": per_token,
                              "predicted": per_token["total"] * g["B"] * g["T"], "counted": step_flops}

    n_params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    opt.step()
    held = training_state.state_bytes(model.parameters(), opt)
    state = {"recipe": "fp32 Adam", "n_params": n_params, "predicted": 16 * n_params,
             "held": held, "held_total": sum(held.values())}
    if device == "cuda":
        torch.cuda.synchronize()
        # allocated since the model was built, less the token ids; each block is rounded up to 512 bytes
        state["memory_allocated"] = torch.cuda.memory_allocated() - baseline - idx.untyped_storage().nbytes()
        on_device = [t for p in model.parameters() for t in (p, p.grad, *opt.state[p].values())
                     if isinstance(t, torch.Tensor) and t.is_cuda]  # Adam's step counters stay on the CPU
        state["held_on_device"] = training_state.held_bytes(on_device)
        state["n_tensors"] = len(on_device)
    out["gpt_state_bytes"] = state
    return out


class _Blocks(torch.nn.Module):
    def __init__(self, n: int, d: int, h: int, use_checkpoint: bool):
        super().__init__()
        self.blocks = torch.nn.ModuleList(models.TransformerBlock(d, h) for _ in range(n))
        self.use_checkpoint = use_checkpoint

    def forward(self, x):
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=False) if self.use_checkpoint else block(x)
        return x


def checkpointing(cfg: dict, device: str, repeat: int) -> dict:
    """Bytes saved for backward, FLOPs and time of forward + backward of the GPT's blocks, plain vs
    checkpointed per block (non-reentrant, as the lecture's code). On CUDA also the allocator's peak of forward +
    backward above what was allocated before it: `peak_memory` with the gradients of a step before already held
    (they are accumulated in place and not counted), `peak_memory_from_no_grads` with none held (the step
    allocates them, `grad_bytes`, and they are counted, as notebook 07's own cell measures).

    The two are timed alternately (best of `repeat` each), so that a busy neighbour slows both alike.
    """
    b, g = cfg["block"], cfg["gpt"]
    result: dict = {"n_layer": g["n_layer"], **b}
    steps = {}
    for mode in ("plain", "per_block"):
        torch.manual_seed(0)
        stack = _Blocks(g["n_layer"], b["d"], b["n_heads"], mode == "per_block").to(device)
        x = torch.randn(b["B"], b["T"], b["d"], device=device, requires_grad=True)
        r = {"saved_bytes": measure.saved_bytes(lambda s=stack, x=x: s(x), exclude=stack.parameters())}
        steps[mode] = lambda s=stack, x=x: s(x).sum().backward()
        r["flops"] = measure.count_flops(steps[mode])  # forward + backward, the recompute included
        if device == "cuda":
            # two peaks above what was allocated before the step: with the gradients the step before left held
            # (accumulated in place: not counted), and with none held, as notebook 07 measures (the step
            # allocates them: counted)
            r["peak_memory"] = measure.peak_memory(steps[mode])
            stack.zero_grad(set_to_none=True)
            x.grad = None
            r["peak_memory_from_no_grads"] = measure.peak_memory(steps[mode])
            r["grad_bytes"] = training_state.held_bytes([x.grad] + [p.grad for p in stack.parameters()])
        steps[mode]()  # warm-up
        result[mode] = r
    times = {mode: [] for mode in steps}
    for _ in range(repeat):
        for mode, fn in steps.items():
            times[mode].append(measure.benchmark(fn, warmup=0, repeat=1, device=device).best)
    for mode in steps:
        result[mode]["seconds"] = min(times[mode])
    result["saved_bytes_ratio"] = result["per_block"]["saved_bytes"] / result["plain"]["saved_bytes"]
    result["flops_overhead"] = result["per_block"]["flops"] / result["plain"]["flops"] - 1
    result["time_overhead"] = result["per_block"]["seconds"] / result["plain"]["seconds"] - 1
    return result


def train_step(cfg: dict, device: str, repeat: int, peak: dict, compile_model: bool = False) -> dict:
    """Time and MFU of a GPT training step (forward, backward, Adam) in fp32 and in bf16 autocast.

    MFU = (6N + 12 L d T) x B T / step time / peak; the peak is `peak[dtype]`, the dtype's own (CUDA: datasheet;
    CPU: the best matmul measured in that dtype).
    """
    g = cfg["gpt"]
    result: dict = {}
    variants = [("fp32", False), ("bf16", False)] + ([("bf16", True)] if compile_model else [])
    for dtype, compiled in variants:
        name = dtype + ("_compiled" if compiled else "")
        model, idx = _gpt(g, device)
        opt = torch.optim.Adam(model.parameters(), lr=1e-4)
        fwd = torch.compile(model) if compiled else model

        def step():
            with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=dtype == "bf16"):
                logits = fwd(idx)
                loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), idx.flatten())
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

        try:
            seconds = _seconds(step, device, repeat, warmup=3 if compiled else 1)
        except Exception as err:  # torch.compile fails in many ways on unusual setups; record why
            result[name] = {"skipped": f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"}
            continue
        flops = _gpt_flops_per_token(model, g["T"])["total"] * g["B"] * g["T"]
        p = peak.get(dtype)
        result[name] = {"seconds": seconds, "model_flops": flops, "flops_per_s": flops / seconds,
                        "tokens_per_s": g["B"] * g["T"] / seconds, "peak_flops_per_s": p,
                        "mfu": flops / seconds / p if p else None}
    return result
