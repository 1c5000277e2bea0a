"""Planning a training run on a cluster: one step built from measured parts, held to published runs.

    shapes       a model's shape from a preset, flags or a Hugging Face config.json; parameters and FLOPs per token
    layout       what is trained where (Run) and how the GPUs are split (Layout)
    compute      GEMM time by shape, attention kernels, memory-bound work, kernel launches: fitted to measurements
    collectives  the algorithm NCCL picks (ring, tree, NVLS, PAT) and its time, at measured bus bandwidths (the one
                 ring model: lecture2.network reads it)
    schedule     pipeline stages, bubble and in-flight activations (1F1B, interleaved, DualPipe); a simulator
    memory       activations per layer and what the runtime takes
    costs        one layer's kernels and collectives for one micro-batch
    step         plan(): the step as named parts
    plan         the Plan record: MFU, HFU, TFLOP/s per GPU, breakdown, report
    search       layouts a framework can launch, ranked, with what each loses to the fastest and which tie with it
    conventions  what a published MFU, HFU or TFLOP/s counts, and the same count computed from a plan
    published    the conformance table: published runs beside the plan's prediction, each by its own convention
    reached      the table's band and what each published run reached, as data every plan reads

`lecture2.planner` re-exports the public names. docs/planning.md states every formula and source.
"""
from .layout import Layout, Run
from .plan import Plan
from .shapes import MODELS, ModelShape, from_config, model
from .step import plan

__all__ = ["MODELS", "Layout", "ModelShape", "Plan", "Run", "from_config", "model", "plan"]
