"""lecture2: instruments, hardware tables, checks and plots for Lecture 2 — PyTorch and compute accounting.

Modules, one job each:
    hardware  dense peak FLOP/s by GPU and dtype, memory, device detection, the CPU's measured peak
    measure   FLOPs of a callable, bytes saved for backward, peak CUDA memory, benchmark timing
    models    the small MLP, the pre-norm TransformerBlock and the GPT stack the notebooks measure
    checks    comparisons and mistake hints for the notebooks' test cells
    fmt       bytes, FLOPs and seconds for people
    plots     the figures the notebooks share
    cli       `python -m lecture2 ...`
"""
from . import checks, fmt, hardware, measure, models

__all__ = ["checks", "fmt", "hardware", "measure", "models"]
__version__ = "0.1.0"
