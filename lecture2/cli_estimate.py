"""`python -m lecture2 estimate`: the lecture's §6 arithmetic, and with a model the run planned on a cluster.

    python -m lecture2 estimate --params 7e9 --tokens 2e12 --gpus 256 --mfu 0.4            # 6ND at an MFU
    python -m lecture2 estimate --model lecture-7b --tokens 2e12 --gpus 256 --zero 3         # one layout
    python -m lecture2 estimate --config path/to/config.json --gpus 1024 --tp 8 --pp 4 --sp  # any HF model
    python -m lecture2 estimate --layers 48 --hidden 6144 --heads 48 --kv-heads 8 --ffn 16384 --vocab 128256 \\
        --gpus 512 --tp 4 --pp 2                                                              # a shape by flags
    python -m lecture2 estimate --model llama3-405b --gpus 16384 --seq 8192 --global-batch 2048 --search

A wrong flag gets one line in Chinese and English naming it and a valid example (no usage dump); --help has it all.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys

from . import editions, estimate, fmt, hardware, messages, planner

__all__ = ["add_parser", "cmd_estimate"]

# one valid example per flag: what a bad value's message shows
EXAMPLES = {
    "--params": "--params 7e9", "--tokens": "--tokens 2e12", "--gpu": "--gpu h100-sxm", "--gpus": "--gpus 256",
    "--mfu": "--mfu 0.4", "--usd-per-gpu-hour": "--usd-per-gpu-hour 2.5", "--dtype": "--dtype bf16",
    "--shard": "--shard zero3", "--model": "--model llama3-70b", "--config": "--config ./config.json",
    "--cluster": "--cluster dgx-h100", "--tp": "--tp 8", "--pp": "--pp 4", "--cp": "--cp 16", "--ep": "--ep 64",
    "--zero": "--zero 1", "--micro-batch": "--micro-batch 1", "--virtual-stages": "--virtual-stages 4",
    "--seq": "--seq 8192", "--batch-tokens": "--batch-tokens 16777216 (16M tokens, a multiple of --seq)",
    "--global-batch": "--global-batch 2048 (sequences per step)", "--layers": "--layers 80", "--hidden": "--hidden 8192",
    "--heads": "--heads 64", "--kv-heads": "--kv-heads 8", "--ffn": "--ffn 28672", "--vocab": "--vocab 128256",
    "--compute-efficiency": "--compute-efficiency 0.7", "--top": "--top 5", "--sp": "--tp 8 --sp",
    "--search": "--model llama3-70b --gpus 1024 --search", "--recompute": "--recompute selective",
    "--fewer-layers-at-ends": "--fewer-layers-at-ends 1", "--last-stage-layers": "--last-stage-layers 2",
    "--comm-sms": "--comm-sms 20", "--tp-overlap": "--tp 8 --sp --tp-overlap userbuffers", "--gemm": "--gemm fp8", "--attention": "--attention flash3",
    "--mlp": "--mlp swiglu", "--schedule": "--schedule 1f1b", "--recipe": '--recipe "bf16 mixed Adam"',
    "--reduce-dtype": "--reduce-dtype fp32", "--activations": "--activations course",
}


def _say(key: str, **fields: object) -> str:
    """A refusal in the language of the edition this runs beside (lecture2.editions.kernel_edition: a kernel's
    notebook, else $LECTURE2_EDITION, which `make lab EDITION=en` sets; else Chinese with the English)."""
    return messages.say(key, editions.kernel_edition(), **fields)


class BilingualParser(argparse.ArgumentParser):
    """An argparse parser whose errors are one line in Chinese and English, with the flag's valid example."""

    def error(self, message: str):  # noqa: D102 (argparse's hook)
        flags = re.findall(r"--[a-z][a-z0-9-]*", message)
        example = next((EXAMPLES[f] for f in flags if f in EXAMPLES), "--model llama3-70b --gpus 1024 --tp 8 --pp 4")
        sys.stderr.write(_say("cli.error", prog=self.prog, message=message, example=example))
        sys.exit(2)


def _number(what: str, *, integer: bool = False, allow_zero: bool = False, at_most_one: bool = False):
    """An argparse `type` for a positive (or non-negative) number; a bad one is a one-line error (exit 2)."""
    def parse(text: str):
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(_say("cli.number", what=what, text=repr(text))) from None
        if math.isnan(value) or math.isinf(value):
            raise argparse.ArgumentTypeError(_say("cli.finite", what=what, text=repr(text)))
        if integer and value != int(value):
            raise argparse.ArgumentTypeError(_say("cli.whole", what=what, text=repr(text)))
        if value < 0 or (value == 0 and not allow_zero):
            bound = ">= 0" if allow_zero else "> 0"
            raise argparse.ArgumentTypeError(_say("cli.bound", what=what, bound=bound, text=repr(text)))
        if at_most_one and value > 1:
            raise argparse.ArgumentTypeError(_say("cli.fraction", what=what, text=repr(text)))
        return int(value) if integer else value
    return parse


def _gpu(text: str) -> hardware.GPUSpec:
    try:
        return hardware.gpu(text)
    except hardware.UnknownGPU:
        raise argparse.ArgumentTypeError(_say("cli.unknown_gpu", text=repr(text),
                                              known=", ".join(hardware.known_gpus()))) from None


def _model(text: str) -> planner.ModelShape:
    try:
        return planner.model(text.strip().lower())
    except KeyError:
        raise argparse.ArgumentTypeError(_say("cli.unknown_model", text=repr(text),
                                              known=", ".join(planner.MODELS))) from None


def _cluster(text: str) -> hardware.ClusterSpec:
    try:
        return hardware.cluster(text)
    except hardware.UnknownGPU:
        raise argparse.ArgumentTypeError(_say("cli.unknown_cluster", text=repr(text),
                                              known=", ".join(hardware.known_clusters()))) from None


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


_SHARD_WORDS = {  # Rajbhandari et al. 2020 (ZeRO); see lecture2.estimate.SHARD_STAGES
    "none": "plain data parallelism (DDP), every GPU holds everything",
    "zero1": "ZeRO-1, optimizer states divided among the GPUs",
    "zero2": "ZeRO-2, optimizer states and gradients divided",
    "zero3": "ZeRO-3 / FSDP, optimizer states, gradients and weights divided",
}
_SHAPE_FLAGS = {"layers": "n_layers", "hidden": "d_model", "heads": "n_heads", "kv_heads": "kv_heads", "ffn": "d_ff",
                "vocab": "vocab_size", "mlp": "ffn"}


def _shape(args: argparse.Namespace) -> tuple[planner.ModelShape | None, list[str]]:
    """The model to plan: --model, --config, or shape flags (which also override a --model's or --config's)."""
    notes, shape = [], args.model
    if args.config:
        try:
            found = planner.from_config(args.config)
        except ValueError as err:
            args.parser.error(f"--config: {err}")
        shape = found.shape
        notes.append(found.describe())
    given = {field: getattr(args, flag) for flag, field in _SHAPE_FLAGS.items() if getattr(args, flag) is not None}
    if given:
        if shape is None:
            missing = [f"--{f.replace('_', '-')}" for f in ("layers", "hidden", "heads", "ffn", "vocab")
                       if getattr(args, f) is None]
            if missing:
                args.parser.error(_say("cli.shape_missing", missing=", ".join(missing)))
            shape = planner.ModelShape("custom", **given, source="shape flags")
        else:
            try:
                shape = planner.ModelShape(**{**shape.__dict__, **given, "name": shape.name + "*",
                                              "n_params_override": None})
            except ValueError as err:
                args.parser.error(f"--layers/--hidden/--heads/...: {err}")
    if shape is not None and args.params_given:  # --params with a shape: plan it with that many parameters
        shape = planner.with_params(shape, args.params)
    return shape, notes


def _cluster_for(args: argparse.Namespace) -> str:
    """--cluster, or the cluster row whose GPU is --gpu."""
    if args.cluster:
        return args.cluster.name
    rows = [c.name for c in hardware.CLUSTERS.values() if c.gpu == args.gpu.name]
    if not rows:
        args.parser.error(_say("cli.no_cluster", gpu=repr(args.gpu.name), known=", ".join(hardware.known_clusters())))
    return rows[0]


def _batch_tokens(args: argparse.Namespace) -> int:
    if args.global_batch is not None and args.batch_tokens is not None:
        args.parser.error(_say("cli.batch_both"))
    if args.global_batch is not None:
        return args.global_batch * args.seq
    tokens = 4 * 2**20 if args.batch_tokens is None else args.batch_tokens
    if tokens % args.seq:
        args.parser.error(_say("cli.batch_whole", tokens=f"{tokens:,}", seq=f"{args.seq:,}",
                               example=f"{max(1, tokens // args.seq) * args.seq:,}"))
    return tokens


def _plan_inputs(args: argparse.Namespace, shape: planner.ModelShape) -> tuple[planner.Run, planner.Layout | None]:
    cluster = _cluster_for(args)
    gemm = args.gemm or ("fp8" if args.dtype == "fp8" else "bf16")
    attention = args.attention or "auto"
    try:
        run = planner.Run(gpus=args.gpus, cluster=cluster, seq_len=args.seq, batch_tokens=_batch_tokens(args),
                          tokens=args.tokens, recipe=args.recipe, reduce_dtype=args.reduce_dtype,
                          compute_efficiency=args.compute_efficiency, usd_per_gpu_hour=args.usd_per_gpu_hour,
                          activations=args.activations, overlap=not args.no_overlap, dtype=gemm, attention=attention,
                          dropout=args.dropout)
        layout = None if args.search else planner.Layout(
            tp=args.tp, pp=args.pp, zero=args.zero, sp=args.sp, micro_batch=args.micro_batch, recompute=args.recompute,
            hsdp=args.hsdp, virtual_stages=args.virtual_stages, fewer_layers_at_ends=args.fewer_layers_at_ends,
            cp=args.cp, ep=args.ep, schedule=args.schedule, tp_overlap=args.tp_overlap, comm_sms=args.comm_sms,
            last_stage_layers=args.last_stage_layers)
    except (ValueError, KeyError) as err:
        args.parser.error(_layout_words(str(err).strip("'\"")))
    return run, layout


def _layout_words(message: str) -> str:
    """A planner message with the flags it is about named (sequence parallelism -> --sp, tp=16 -> --tp 16)."""
    names = {"sp": "--sp", "tp": "--tp", "pp": "--pp", "cp": "--cp", "ep": "--ep", "zero": "--zero",
             "hsdp": "--hsdp", "virtual_stages": "--virtual-stages", "micro_batch": "--micro-batch",
             "batch_tokens": "--batch-tokens", "seq_len": "--seq", "gpus": "--gpus", "dualpipe": "--schedule"}
    named = [flag for key, flag in names.items() if re.search(rf"\b{key}\b", message)]
    return _say("cli.layout", message=(f"{', '.join(dict.fromkeys(named))}: " if named else "") + message)


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


def _print_lecture(args: argparse.Namespace, r: dict, peak: float) -> None:
    g = args.gpu
    print(f"Training a {_count(args.params)}-parameter model on {_count(args.tokens)} tokens")
    print(f"  compute     6 x N x D = {fmt.format_flops(r['flops'])}")
    print(f"  hardware    {args.gpus} x {g.full_name}, {args.dtype} dense peak {fmt.format_rate(peak)} each ({g.source})")
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


def _resolve_gpu(args: argparse.Namespace) -> None:
    """--gpu and --cluster name the same GPU, or one line says they do not (H100 days beside an A100 plan): --gpu
    alone picks the cluster row with that GPU, --cluster alone the GPU of its nodes, neither the H100."""
    if args.gpu is None:
        args.gpu = args.cluster.gpu_spec if args.cluster else hardware.gpu("h100-sxm")
    elif args.cluster is not None and args.cluster.gpu != args.gpu.name:
        rows = ", ".join(c.name for c in hardware.CLUSTERS.values() if c.gpu == args.gpu.name) or "none"
        args.parser.error(_say("cli.gpu_cluster", gpu=args.gpu.name, cluster=args.cluster.name,
                               holds=args.cluster.gpu_spec.full_name, rows=rows))


def cmd_estimate(args: argparse.Namespace) -> int:
    """Print the FLOPs, time, GPU-hours, cost and training memory of a run (or one JSON object); with a model, the
    run planned on a cluster (one layout, or --search for the fastest that fit)."""
    _resolve_gpu(args)
    try:
        peak = args.gpu.peak_flops(args.dtype)
    except ValueError as err:
        args.parser.error(f"--dtype: {err}")
    args.params_given = args.params is not None
    shape, notes = _shape(args)
    if args.params is None:
        if shape is None:
            args.parser.error(_say("cli.params"))
        args.params = shape.n_params
    if args.search and shape is None:
        args.parser.error(_say("cli.search"))
    r = _run_estimate(args, peak)
    planned = None
    if shape is not None:
        run, layout = _plan_inputs(args, shape)
        if args.search:
            planned = planner.search(shape, run, top=args.top)
            r["search"] = [{**x.plan.as_dict(), "loses_to_best": x.loss, "why": x.why} for x in planned]
        else:
            try:
                planned = planner.plan(shape, run, layout)
            except ValueError as err:
                args.parser.error(_layout_words(str(err)))
            r["plan"] = planned.as_dict()
        r["model_notes"] = notes
    if args.json:
        print(json.dumps(r, indent=2, default=str))
        return 0
    _print_lecture(args, r, peak)
    if planned is None:
        return 0
    print()
    for note in notes:
        print(note)
    if args.search:
        if not planned:
            print(_say("cli.none_fits", name=shape.name, gpus=args.gpus))
            return 1
        print(f"The {len(planned)} fastest layouts of {shape.name} that fit on {args.gpus} GPUs "
              f"({planned[0].plan.run.cluster}; lecture2.planner, docs/planning.md), with what each loses to the best:")
        for i, x in enumerate(planned, 1):
            print(f"  {i}. {x.line()}")
        print()
        print(planned[0].plan.report())
    else:
        print(planned.report())
    return 0


def add_parser(sub) -> argparse.ArgumentParser:
    """The `estimate` subcommand's parser (its own small module: every option documents itself)."""
    est = sub.add_parser(
        "estimate", help="FLOPs, time, GPU-hours, cost and memory of a training run; with a model, its plan",
        description="Time = 6*N*D / (GPUs x dense peak x MFU); cost = time x GPUs x price (lecture 2, section 6). "
                    "With --model, --config or shape flags, the run is also planned on a cluster (lecture2.planner, "
                    "docs/planning.md).",
        epilog="examples:\n  python -m lecture2 estimate --params 7e9 --tokens 2e12 --gpu h100-sxm --gpus 256 --mfu 0.4\n"
               "  python -m lecture2 estimate --model llama3-405b --gpus 16384 --seq 8192 --global-batch 2048 "
               "--tp 8 --sp --pp 16 --virtual-stages 7 --zero 2 --fewer-layers-at-ends 1\n"
               "  python -m lecture2 estimate --config ./config.json --gpus 1024 --search",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_run_options(est)
    _add_shape_options(est)
    _add_plan_options(est)
    est.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    est.set_defaults(func=cmd_estimate, parser=est)
    return est


def _add_run_options(est) -> None:
    """The 6ND estimate's options: parameters, tokens, GPU, GPU count, MFU, price (USD per GPU-hour), dtype, shard."""
    est.add_argument("--params", type=_number("--params"), default=None, metavar="N",
                     help="model parameters, e.g. 7e9 (with a shape: plan it with this many parameters)")
    est.add_argument("--tokens", type=_number("--tokens"), required=True, metavar="D", help="training tokens, e.g. 2e12")
    est.add_argument("--gpu", type=_gpu, default=None, metavar="NAME",
                     help=f"a GPU of lecture2.hardware's table (default: --cluster's, else h100-sxm): "
                          f"{', '.join(hardware.known_gpus())}")
    est.add_argument("--gpus", type=_number("--gpus", integer=True), default=1, metavar="G", help="number of GPUs")
    est.add_argument("--mfu", type=_number("--mfu", at_most_one=True), default=0.4,
                     help="model FLOPs utilization for the 6ND estimate, a fraction in (0, 1] (default 0.4, the lecture's)")
    est.add_argument("--usd-per-gpu-hour", type=_number("--usd-per-gpu-hour", allow_zero=True), default=2.5,
                     metavar="USD", help="price of one GPU for one hour (default 2.5, the lecture's H100 price)")
    est.add_argument("--dtype", choices=hardware.DTYPES, default="bf16",
                     help="the peak column of the 6ND estimate (default bf16); fp8 also plans FP8 GEMMs")
    est.add_argument("--shard", choices=list(estimate.SHARD_STAGES), default="zero3",
                     help="how the 6ND estimate divides the training state: none, zero1, zero2, zero3 (default)")


def _add_shape_options(est) -> None:
    """The model to plan: a preset, a config.json, or the shape flags (layers, widths, heads, vocabulary, MLP)."""
    shape = est.add_argument_group("the model to plan (one of --model, --config, or the shape flags)")
    shape.add_argument("--model", type=_model, default=None, metavar="NAME", help=f"a preset: {', '.join(planner.MODELS)}")
    shape.add_argument("--config", default=None, metavar="PATH",
                       help="a Hugging Face config.json (LLaMA, Mistral, Qwen, GPT-2, GPT-NeoX, Mixtral, DeepSeek)")
    for flag, what in (("--layers", "decoder layers"), ("--hidden", "hidden size d"), ("--heads", "attention heads"),
                       ("--kv-heads", "key/value heads (GQA)"), ("--ffn", "MLP hidden width"),
                       ("--vocab", "vocabulary size")):
        shape.add_argument(flag, type=_number(flag, integer=True), default=None, help=what)
    shape.add_argument("--mlp", choices=("swiglu", "gelu"), default=None, help="the MLP: SwiGLU (3 matrices) or GELU")


def _add_plan_options(est) -> None:
    """The planning group: the cluster and layout (parallelism, ZeRO, pipeline), then the step's kernels and search."""
    plan = est.add_argument_group(
        "planning on a cluster (lecture2.planner)",
        "The step as a sum of named parts: GEMMs by shape, attention, memory-bound work, each collective with the "
        "algorithm NCCL picks, the pipeline bubble, the optimizer; MFU, HFU, TFLOP/s per GPU, days and cost.")
    plan.add_argument("--cluster", type=_cluster, default=None, metavar="NAME",
                      help=f"the nodes (default: the row with --gpu): {', '.join(hardware.known_clusters())}")
    for flag, what in (("--tp", "tensor-parallel GPUs per layer (within a node)"), ("--pp", "pipeline stages"),
                       ("--cp", "context-parallel GPUs per sequence"), ("--ep", "expert-parallel GPUs (MoE)")):
        plan.add_argument(flag, type=_number(flag, integer=True), default=1, help=what)
    plan.add_argument("--zero", type=int, choices=(0, 1, 2, 3), default=1,
                      help="ZeRO stage over the data-parallel GPUs (1: Megatron's distributed optimizer; 3: FSDP)")
    plan.add_argument("--hsdp", action="store_true", help="ZeRO-3 inside a node, replicas across nodes")
    plan.add_argument("--sp", action="store_true", help="sequence parallelism (needs --tp > 1)")
    plan.add_argument("--micro-batch", type=_number("--micro-batch", integer=True), default=1, metavar="B",
                      help="sequences per micro-batch")
    plan.add_argument("--virtual-stages", type=_number("--virtual-stages", integer=True), default=1, metavar="V",
                      help="interleaved 1F1B: model chunks per pipeline stage")
    plan.add_argument("--schedule", choices=("1f1b", "dualpipe"), default="1f1b", help="the pipeline schedule")
    plan.add_argument("--fewer-layers-at-ends", type=int, default=0, metavar="K",
                      help="the first and last pipeline stage hold K layers fewer (Llama 3: 1)")
    plan.add_argument("--last-stage-layers", type=int, default=None, metavar="K",
                      help="layers on the last stage (it also runs the head), the rest spread evenly")
    plan.add_argument("--recompute", choices=estimate.RECOMPUTE, default="none",
                      help="activation recomputation: selective = Megatron-Core's recompute modules")
    _add_step_options(plan)


def _add_step_options(plan) -> None:
    """The planning group's rest: TP overlap, SMs for communication, sequence and batch (tokens, sequences), GEMM and
    attention kernels, the training recipe (bytes per parameter), activations' accounting, what-ifs and --search."""
    plan.add_argument("--tp-overlap", choices=("none", "megatron", "userbuffers"), default="megatron",
                      help="how TP's collectives meet the GEMMs: megatron (default: the backward's input-gradient "
                           "collective beside the weight-gradient GEMM), userbuffers (Transformer Engine's "
                           "--tp-comm-overlap, needs --sp), none")
    plan.add_argument("--comm-sms", type=int, default=0, metavar="S", help="SMs given to communication kernels")
    plan.add_argument("--seq", type=_number("--seq", integer=True), default=4096, help="sequence length (default 4096)")
    plan.add_argument("--batch-tokens", type=_number("--batch-tokens", integer=True), default=None, metavar="TOKENS",
                      help="tokens per step, all GPUs together (default 4M, Llama 2's)")
    plan.add_argument("--global-batch", type=_number("--global-batch", integer=True), default=None, metavar="SEQUENCES",
                      help="sequences per step (instead of --batch-tokens)")
    plan.add_argument("--gemm", choices=("bf16", "fp8", "fp8-blockwise"), default=None,
                      help="the GEMMs' dtype (default bf16, or fp8 with --dtype fp8); fp8-blockwise: 1x128 scales")
    plan.add_argument("--attention", choices=("flash2", "flash3", "explicit"), default=None,
                      help="the attention kernel (default flash3 on Hopper, else flash2)")
    plan.add_argument("--dropout", action="store_true", help="the model trains with dropout")
    plan.add_argument("--recipe", choices=list(estimate.MEMORY_RECIPES), default="bf16 mixed Adam",
                      help="bytes per parameter of the training state (default the lecture's 2 + 2 + 12)")
    plan.add_argument("--reduce-dtype", choices=("fp32", "bf16"), default="fp32",
                      help="the gradients' collectives (default fp32: Megatron's main_grad, torchtitan's default)")
    plan.add_argument("--activations", choices=estimate.ACTIVATION_CONVENTIONS, default="course",
                      help="course: notebook 06's accounting (fused kernels); korthikanti: sbh(34 + 5as/h)")
    plan.add_argument("--compute-efficiency", type=_number("--compute-efficiency", at_most_one=True), default=None,
                      metavar="E", help="a what-if: every GEMM at this fraction of the peak (default: by shape)")
    plan.add_argument("--no-overlap", action="store_true", help="no communication hidden behind compute")
    plan.add_argument("--search", action="store_true", help="try the layouts practitioners run; print the fastest")
    plan.add_argument("--top", type=_number("--top", integer=True), default=5, help="layouts --search prints")
