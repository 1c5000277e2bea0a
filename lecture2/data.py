"""Training data on disk: a token file read through a counter.

A tokenized corpus is one long array of token ids in a file (`uint16` when the vocabulary has fewer than 65,536
tokens: 2 bytes a token). `np.memmap` maps the file without reading it; slicing the map copies only the slice.
`CountedReads` wraps such an array and counts the bytes every slice copies out of it, so that a `get_batch` can be
set beside a prediction of what it reads.
"""
from __future__ import annotations

import numpy as np

__all__ = ["CountedReads"]


class CountedReads:
    """A 1-D array of tokens (a `np.memmap`, or any numpy array) that counts what is read through it.

    `reads[i:j]` returns a copy of elements i..j-1 (a numpy array) and adds its `nbytes` to `bytes_read` (bytes);
    `reads[i]` reads one element. `len(reads)` is the number of tokens, `nbytes` the size of the whole array
    (bytes), `dtype` its dtype. Nothing is read when the wrapper is made."""

    def __init__(self, tokens: np.ndarray):
        if getattr(tokens, "ndim", None) != 1:
            raise ValueError(f"CountedReads 要一维的 token 数组 (a 1-D array of tokens), 得到 {type(tokens).__name__}")
        self._tokens = tokens
        self.bytes_read = 0
        self.dtype = tokens.dtype
        self.nbytes = int(tokens.nbytes)

    def __len__(self) -> int:
        return len(self._tokens)

    def __getitem__(self, index) -> np.ndarray:
        out = np.array(self._tokens[index])  # a copy: the bytes leave the file's mapping here
        self.bytes_read += int(out.nbytes)
        return out
