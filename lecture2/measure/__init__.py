"""Instruments: FLOPs of a callable, bytes autograd saves for backward, peak CUDA memory, and timing.

Every function takes a callable and its arguments, runs it, and reports what happened; none of them
knows a formula. Units: FLOPs (floating-point operations, a multiply-add counts 2), bytes, seconds.

One name space, three rooms: `counting` (FLOPs, saved and kept bytes, the CUDA peak), `timing` (benchmark,
paired_times, peak_rss, SlowDataset) and `lines` (time_by_line and the frames it reads).
"""
from __future__ import annotations

from .counting import (SavedTensor, block_saved_bytes, count_flops, flop_breakdown, kept_bytes, peak_memory,
                       saved_bytes, saved_tensors)
from .lines import LineTime, frame_in_files, model_files, time_by_line
from .timing import PairedTiming, SlowDataset, Timing, benchmark, paired_times, peak_rss

__all__ = ["Timing", "PairedTiming", "SavedTensor", "LineTime", "SlowDataset", "benchmark", "block_saved_bytes",
           "count_flops", "flop_breakdown", "frame_in_files", "kept_bytes", "model_files", "paired_times",
           "peak_memory", "peak_rss", "saved_bytes", "saved_tensors", "time_by_line"]
