"""`python -m lecture2 COMMAND`: tools for the course and for people planning runs.

    python -m lecture2 env        the device, its dtype support and the peak FLOP/s that applies
    python -m lecture2 estimate   FLOPs, time, GPU-hours, cost and memory of a training run
    python -m lecture2 profile    measure this device and the course's predictions; write a JSON profile

Example (the lecture's §6: a 7B model on 2T tokens on 256 H100 at 40% MFU, $2.5 per GPU-hour):

    python -m lecture2 estimate --params 7e9 --tokens 2e12 --gpu h100-sxm --gpus 256 --mfu 0.4 \\
        --usd-per-gpu-hour 2.5 [--shard zero3] [--json]

and the same run planned on DGX H100 nodes, laid out as TP x PP x DP (lecture2.planner, docs/planning.md):

    python -m lecture2 estimate --model lecture-7b --tokens 2e12 --gpus 256 --zero 3          # one layout
    python -m lecture2 estimate --model llama3-405b --gpus 16384 --seq 8192 --batch-tokens 16777216 --search
"""
from __future__ import annotations

import argparse
import json
import math
import sys

import torch

from . import estimate, fmt, hardware, planner

__all__ = ["main"]


def cmd_env(args: argparse.Namespace) -> int:
    """Print the device, its dtype support and the peak FLOP/s that applies."""
    device = hardware.detect_device()
    info = hardware.device_summary(device)
    print(f"torch      {info['torch']}")
    print(f"device     {device} ({info['name']})")
    if device == "cuda":
        print(f"memory     {fmt.format_bytes(info['memory_bytes'])} ({fmt.format_bytes(info['memory_bytes'], binary=True)})")
    else:
        print(f"threads    {info['threads']}")
    print("matmul     " + "  ".join(
        f"{name}:{'yes' if hardware.matmul_works(d, device) else 'no'}"
        for name, d in (("fp32", torch.float32), ("bf16", torch.bfloat16), ("fp16", torch.float16))))
    if device == "cuda":
        try:
            spec = hardware.gpu_from_device_name(info["name"])
        except hardware.UnknownGPU as err:
            print(f"peak       {err}")
            return 0
        print(f"peak       {spec.full_name} datasheet ({spec.source}), dense:")
        for key, value in spec.peak.items():
            print(f"           {key:5s} {fmt.format_rate(value)}")
    elif device == "cpu":
        print("peak       measured matmul on this CPU (no datasheet applies; hardware.cpu_peak):")
        print(f"           fp32  {hardware.cpu_peak(torch.float32).describe()}  <- the peak that applies")
        # the size adapts: a CPU whose bf16 matmul is slow measures it on a smaller n, in under a second
        print(f"           bf16  {hardware.cpu_peak(torch.bfloat16).describe()}")
    else:
        print("peak       no published dense peak for this device")
    return 0


def _number(what: str, *, integer: bool = False, allow_zero: bool = False, at_most_one: bool = False):
    """An argparse `type` for a positive (or non-negative) number; a bad one is an argparse error (exit 2)."""
    def parse(text: str):
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be a number, got {text!r}") from None
        if math.isnan(value) or math.isinf(value):
            raise argparse.ArgumentTypeError(f"{what} must be finite, got {text!r}")
        if integer and value != int(value):
            raise argparse.ArgumentTypeError(f"{what} must be a whole number, got {text!r}")
        if value < 0 or (value == 0 and not allow_zero):
            raise argparse.ArgumentTypeError(f"{what} must be {'>= 0' if allow_zero else '> 0'}, got {text!r}")
        if at_most_one and value > 1:
            raise argparse.ArgumentTypeError(f"{what} is a fraction of peak and must be in (0, 1], got {text!r}")
        return int(value) if integer else value
    return parse


def _gpu(text: str) -> hardware.GPUSpec:
    try:
        return hardware.gpu(text)
    except hardware.UnknownGPU:
        raise argparse.ArgumentTypeError(f"unknown GPU {text!r}; known GPUs: {', '.join(hardware.known_gpus())}") from None


def _model(text: str) -> planner.ModelShape:
    try:
        return planner.model(text.strip().lower())
    except KeyError:
        raise argparse.ArgumentTypeError(f"unknown model {text!r}; known models: {', '.join(planner.MODELS)}") from None


def _cluster(text: str) -> hardware.ClusterSpec:
    try:
        return hardware.cluster(text)
    except hardware.UnknownGPU:
        raise argparse.ArgumentTypeError(f"unknown cluster {text!r}; known clusters: "
                                         f"{', '.join(hardware.known_clusters())}") from None


def _count(x: float) -> str:
    """7e9 as "7e9", 1.5e13 as "1.5e13", 300 as "300"."""
    if x < 1e4:
        return f"{x:g}"
    mantissa, exponent = f"{x:.3e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"


def _usd(x: float) -> str:
    """Dollars with cents where they matter: $147,396, $2.50, $0.0000737."""
    if x >= 100 or x == 0:
        return f"${x:,.0f}"
    if x >= 1:
        return f"${x:,.2f}"
    return f"${x:.{2 - math.floor(math.log10(x))}f}"


def _keep_negative_numbers(argv: list[str]) -> list[str]:
    """["--params", "-7e9"] -> ["--params=-7e9"]: argparse takes "-7e9" for an option, and the user
    should hear that the number is negative rather than that it is missing."""
    out: list[str] = []
    for arg in argv:
        if out and out[-1].startswith("--") and "=" not in out[-1] and arg.startswith("-"):
            try:
                float(arg)
            except ValueError:
                pass
            else:
                out[-1] = f"{out[-1]}={arg}"
                continue
        out.append(arg)
    return out


def _run_estimate(args: argparse.Namespace, peak: float) -> dict:
    flops = estimate.training_flops(args.params, args.tokens)
    seconds = estimate.training_seconds(flops, args.gpus, peak, args.mfu)
    hours = estimate.gpu_hours(seconds, args.gpus)
    usd = estimate.cost_usd(hours, args.usd_per_gpu_hour)
    memory = {name: {"bytes_per_param": r.bytes_per_param,
                     "total_bytes": estimate.training_memory_bytes(args.params, r),
                     "per_gpu": estimate.sharded_memory_bytes(args.params, args.gpus, args.shard, r)}
              for name, r in estimate.MEMORY_RECIPES.items()}
    return {
        "n_params": args.params, "n_tokens": args.tokens, "gpu": args.gpu.name, "n_gpus": args.gpus,
        "dtype": args.dtype, "peak_flops_per_gpu": peak, "mfu": args.mfu,
        "effective_flops_per_s": args.gpus * peak * args.mfu,
        "flops": flops, "seconds": seconds, "hours": seconds / estimate.SECONDS_PER_HOUR,
        "days": seconds / estimate.SECONDS_PER_DAY, "gpu_hours": hours,
        "usd_per_gpu_hour": args.usd_per_gpu_hour, "cost_usd": usd,
        "cost_per_1k_tokens_usd": estimate.cost_per_1k_tokens_usd(usd, args.tokens),
        "gpu_memory_bytes": args.gpu.memory_bytes, "shard": args.shard, "memory": memory,
    }


def _cluster_for(args: argparse.Namespace) -> str:
    """--cluster, or the cluster row whose GPU is --gpu."""
    if args.cluster:
        return args.cluster.name
    rows = [c.name for c in hardware.CLUSTERS.values() if c.gpu == args.gpu.name]
    if not rows:
        args.parser.error(f"no cluster row has the GPU {args.gpu.name!r}; pass --cluster "
                          f"({', '.join(hardware.known_clusters())})")
    return rows[0]


def _plan_inputs(args: argparse.Namespace) -> tuple[planner.ModelShape, planner.Run, planner.Layout | None]:
    shape = args.model
    if args.params_given:  # --params with --model: plan the model's shape with that many parameters (a round figure)
        shape = planner.ModelShape(**{**shape.__dict__, "n_params_override": args.params})
    try:
        run = planner.Run(gpus=args.gpus, cluster=_cluster_for(args), seq_len=args.seq, batch_tokens=args.batch_tokens,
                          tokens=args.tokens, recipe=args.recipe, reduce_dtype=args.reduce_dtype,
                          compute_efficiency=args.compute_efficiency or args.mfu,
                          usd_per_gpu_hour=args.usd_per_gpu_hour, activations=args.activations,
                          overlap=not args.no_overlap, dtype=args.dtype)
        layout = None if args.search else planner.Layout(
            tp=args.tp, pp=args.pp, zero=args.zero, sp=args.sp, micro_batch=args.micro_batch, recompute=args.recompute,
            hsdp=args.hsdp, virtual_stages=args.virtual_stages, fewer_layers_at_ends=args.fewer_layers_at_ends)
    except (ValueError, KeyError) as err:
        args.parser.error(str(err).strip("'\""))
    return shape, run, layout


def _plan_json(p: planner.Plan) -> dict:
    return {"model": p.model.name, "n_params": p.model.n_params, "layout": dict(p.layout.__dict__), "dp": p.dp,
            "micro_batches": p.micro_batches, "memory_per_gpu": p.memory, "memory_stage": p.memory_stage,
            "gpu_memory_bytes": p.gpu_memory_bytes, "fits": p.fits, "comm": p.comm, "compute_s": p.compute_s,
            "bubble_s": p.bubble_s, "optimizer_s": p.optimizer_s, "exposed_comm_s": p.exposed_comm_s,
            "step_s": p.step_s, "mfu": p.mfu, "days": p.days, "cost_usd": p.cost_usd, "bottleneck": p.bottleneck()}


def cmd_estimate(args: argparse.Namespace) -> int:
    """Print the FLOPs, time, GPU-hours, cost and training memory of a run (or one JSON object); with --model,
    the run planned on a cluster as TP x PP x DP (one layout, or --search for the fastest that fit)."""
    try:
        peak = args.gpu.peak_flops(args.dtype)
    except ValueError as err:
        args.parser.error(str(err))
    args.params_given = args.params is not None
    if args.params is None:
        if args.model is None:
            args.parser.error("the following arguments are required: --params (or --model)")
        args.params = args.model.n_params
    if args.search and args.model is None:
        args.parser.error("--search needs --model (a shape to lay out)")
    r = _run_estimate(args, peak)
    planned = None
    if args.model is not None:
        shape, run, layout = _plan_inputs(args)
        if args.search:
            found = planner.search(shape, run, top=args.top)
            r["search"] = [_plan_json(p) for p in found]
            planned = found
        else:
            try:
                planned = planner.plan(shape, run, layout)
            except ValueError as err:
                args.parser.error(str(err))
            r["plan"] = _plan_json(planned)
    if args.json:
        print(json.dumps(r, indent=2))
        return 0
    g = args.gpu
    print(f"Training a {_count(args.params)}-parameter model on {_count(args.tokens)} tokens")
    print(f"  compute     6 x N x D = {fmt.format_flops(r['flops'])}")
    print(f"  hardware    {args.gpus} x {g.full_name}, {args.dtype} dense peak {fmt.format_rate(peak)} each "
          f"({g.source})")
    print(f"  throughput  {args.gpus} x {fmt.format_rate(peak)} x MFU {args.mfu:.2f} = "
          f"{fmt.format_rate(r['effective_flops_per_s'])}")
    print(f"  time        {r['days']:,.2f} days ({r['hours']:,.1f} hours, {r['seconds']:,.0f} s)")
    print(f"  GPU-hours   {r['gpu_hours']:,.0f}")
    print(f"  cost        {_usd(r['cost_usd'])} at ${args.usd_per_gpu_hour:,.2f} per GPU-hour "
          f"= {_usd(r['cost_per_1k_tokens_usd'])} per 1K tokens")
    print(f"              one run only: with tuning, failures and evaluation, budget 2-5x "
          f"({_usd(2 * r['cost_usd'])} to {_usd(5 * r['cost_usd'])})")
    print("Memory for weights, gradients and optimizer states (activations not included):")
    print(f"  per GPU with --shard {args.shard} over {args.gpus} GPUs: {_SHARD_WORDS[args.shard]}")
    print(f"  {'recipe':<29}{'bytes/param':>11}{'total':>10} |{'weights':>11}{'gradients':>11}{'optimizer':>11}"
          f"{'per GPU':>11}")
    for name, m in r["memory"].items():
        per = m["per_gpu"]
        fits = "fits" if per["total"] <= g.memory_bytes else "does not fit"
        print(f"  {name:<29}{m['bytes_per_param']:>11}{fmt.format_bytes(m['total_bytes'], digits=1):>10} |"
              + "".join(f"{fmt.format_bytes(per[k]) if per[k] else '0 B':>11}"
                        for k in ("weights", "gradients", "optimizer", "total"))
              + f"  {fits} in {fmt.format_bytes(g.memory_bytes, digits=1)}")
    if planned is None:
        return 0
    print()
    if args.search:
        if not planned:
            print(f"No layout of {args.model.name} fits on {args.gpus} GPUs with a batch of {args.batch_tokens:,} tokens.")
            return 1
        print(f"The {len(planned)} fastest layouts of {args.model.name} that fit on {args.gpus} GPUs "
              f"({planned[0].run.cluster}; lecture2.planner, docs/planning.md):")
        for i, p in enumerate(planned, 1):
            print(f"  {i}. {p.summary()}")
        print()
        print(planned[0].report())
    else:
        print(planned.report())
    return 0


_SHARD_WORDS = {  # Rajbhandari et al. 2020 (ZeRO); see lecture2.estimate.SHARD_STAGES
    "none": "plain data parallelism (DDP), every GPU holds everything",
    "zero1": "ZeRO-1, optimizer states divided among the GPUs",
    "zero2": "ZeRO-2, optimizer states and gradients divided",
    "zero3": "ZeRO-3 / FSDP, optimizer states, gradients and weights divided",
}


def cmd_profile(args: argparse.Namespace) -> int:
    """Measure this device (CUDA or CPU), write the profile as JSON to --out, print the headline figures."""
    from pathlib import Path

    from . import profile

    out = Path(args.out)
    if not out.parent.is_dir():
        args.parser.error(f"--out: directory {str(out.parent)!r} does not exist (create it first)")
    command = "python -m lecture2 " + " ".join(args.argv)
    result = profile.run(compile_model=False if args.no_compile else None, command=command)
    profile.save(result, out)
    print(profile.summary(result))
    print(f"wrote {out} in {result['made']['seconds']:.0f} s")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m lecture2", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    env = sub.add_parser("env", help="device, dtype support and the peak FLOP/s that applies")
    env.set_defaults(func=cmd_env)
    est = sub.add_parser(
        "estimate", help="FLOPs, time, GPU-hours, cost and memory of a training run",
        description="Time = 6*N*D / (GPUs x dense peak x MFU); cost = time x GPUs x price (lecture 2, section 6).",
        epilog="example: python -m lecture2 estimate --params 7e9 --tokens 2e12 --gpu h100-sxm --gpus 256 "
               "--mfu 0.4 --usd-per-gpu-hour 2.5 --shard zero3")
    est.add_argument("--params", type=_number("--params"), default=None, metavar="N",
                     help="model parameters, e.g. 7e9 (with --model: the model's own count unless given)")
    est.add_argument("--tokens", type=_number("--tokens"), required=True, metavar="D",
                     help="training tokens, e.g. 2e12")
    est.add_argument("--gpu", type=_gpu, default="h100-sxm", metavar="NAME",
                     help=f"a GPU of lecture2.hardware's table (default h100-sxm): {', '.join(hardware.known_gpus())}")
    est.add_argument("--gpus", type=_number("--gpus", integer=True), default=1, metavar="G",
                     help="number of GPUs (default 1)")
    est.add_argument("--mfu", type=_number("--mfu", at_most_one=True), default=0.4,
                     help="model FLOPs utilization, a fraction in (0, 1] (default 0.4, the lecture's)")
    est.add_argument("--usd-per-gpu-hour", type=_number("--usd-per-gpu-hour", allow_zero=True), default=2.5,
                     metavar="USD", help="price of one GPU for one hour (default 2.5, the lecture's H100 price)")
    est.add_argument("--dtype", choices=hardware.DTYPES, default="bf16",
                     help="the peak column of the table (default bf16)")
    est.add_argument("--shard", choices=list(estimate.SHARD_STAGES), default="zero3",
                     help="how the training state is divided among the GPUs for the per-GPU memory: none (DDP), "
                          "zero1 (optimizer states), zero2 (+ gradients), zero3 (+ weights, FSDP; the default)")
    plan = est.add_argument_group(
        "planning on a cluster (lecture2.planner)",
        "With --model the run is also laid out on a cluster as tensor x pipeline x data parallelism: memory per GPU, "
        "communication per step by kind, step time, MFU (with 6N + 12LdT FLOPs per token), days and cost.")
    plan.add_argument("--model", type=_model, default=None, metavar="NAME",
                      help=f"a model shape: {', '.join(planner.MODELS)}")
    plan.add_argument("--cluster", type=_cluster, default=None, metavar="NAME",
                      help=f"the nodes (default: the row with --gpu): {', '.join(hardware.known_clusters())}")
    plan.add_argument("--tp", type=_number("--tp", integer=True), default=1, help="tensor-parallel GPUs per layer")
    plan.add_argument("--pp", type=_number("--pp", integer=True), default=1, help="pipeline stages")
    plan.add_argument("--zero", type=int, choices=(0, 1, 2, 3), default=1,
                      help="ZeRO stage over the data-parallel GPUs (1: Megatron's distributed optimizer; 3: FSDP)")
    plan.add_argument("--hsdp", action="store_true", help="ZeRO-3 inside a node, replicas across nodes")
    plan.add_argument("--sp", action="store_true", help="sequence parallelism (needs --tp > 1)")
    plan.add_argument("--micro-batch", type=_number("--micro-batch", integer=True), default=1, metavar="B",
                      help="sequences per micro-batch")
    plan.add_argument("--virtual-stages", type=_number("--virtual-stages", integer=True), default=1, metavar="V",
                      help="interleaved 1F1B: model chunks per pipeline stage")
    plan.add_argument("--fewer-layers-at-ends", type=int, default=0, metavar="K",
                      help="the first and last pipeline stage hold K layers fewer (Llama 3: 1)")
    plan.add_argument("--recompute", choices=estimate.RECOMPUTE, default="none", help="activation recomputation")
    plan.add_argument("--seq", type=_number("--seq", integer=True), default=4096, help="sequence length (default 4096)")
    plan.add_argument("--batch-tokens", type=_number("--batch-tokens", integer=True), default=4 * 2**20,
                      metavar="TOKENS", help="tokens per step, all GPUs together (default 4M, Llama 2's)")
    plan.add_argument("--recipe", choices=list(estimate.MEMORY_RECIPES), default="bf16 mixed Adam",
                      help="bytes per parameter of the training state (default the lecture's 2 + 2 + 12)")
    plan.add_argument("--reduce-dtype", choices=("fp32", "bf16"), default="fp32",
                      help="the gradients' collectives (default fp32: Megatron's main_grad, torchtitan's default)")
    plan.add_argument("--activations", choices=estimate.ACTIVATION_CONVENTIONS, default="course",
                      help="course: notebook 06's accounting (fused attention, no dropout); korthikanti: sbh(34 + 5as/h)")
    plan.add_argument("--compute-efficiency", type=_number("--compute-efficiency", at_most_one=True), default=None,
                      metavar="E", help="fraction of peak the matmuls reach while computing (default: --mfu)")
    plan.add_argument("--no-overlap", action="store_true", help="no communication hidden behind compute")
    plan.add_argument("--search", action="store_true", help="try every layout; print the fastest that fit")
    plan.add_argument("--top", type=_number("--top", integer=True), default=5, help="layouts --search prints")
    est.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    est.set_defaults(func=cmd_estimate, parser=est)
    prof = sub.add_parser(
        "profile", help="measure this device and the course's predictions; write a JSON profile",
        description="Matmul FLOP/s by size and dtype against the peak that applies, copy bandwidth, and on "
                    "lecture2's models FLOPs, activation and training-state bytes predicted vs measured, "
                    "checkpointing, a training step's MFU. Small sizes on a CPU (< 2 min), large on CUDA.",
        epilog="example: python -m lecture2 profile --out lecture2/profiles/h200.json")
    prof.add_argument("--out", required=True, metavar="FILE.json", help="where to write the profile (JSON)")
    prof.add_argument("--no-compile", action="store_true", help="skip the torch.compile'd step (CUDA only)")
    prof.set_defaults(func=cmd_profile, parser=prof)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(_keep_negative_numbers(sys.argv[1:] if argv is None else list(argv)))
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    args.argv = sys.argv[1:] if argv is None else list(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
