"""lecture2.data: a token file read through a counter counts the bytes its slices copy, and nothing else."""
from __future__ import annotations

import numpy as np
import pytest

from lecture2 import data


def test_slices_of_a_memmap_count_their_bytes_and_nothing_is_read_at_first(tmp_path):
    """Does a memmap of a uint16 token file read nothing when wrapped, and exactly each slice's bytes after?"""
    path = tmp_path / "tokens.bin"
    np.arange(1000, dtype=np.uint16).tofile(path)
    tokens = data.CountedReads(np.memmap(path, dtype=np.uint16, mode="r"))
    assert (len(tokens), tokens.nbytes, tokens.bytes_read, tokens.dtype) == (1000, 2000, 0, np.uint16)
    window = tokens[10:75]
    assert list(window[:3]) == [10, 11, 12] and tokens.bytes_read == 65 * 2
    assert tokens[999] == 999 and tokens.bytes_read == 65 * 2 + 2
    window[0] = 7  # a copy: the file is untouched
    assert tokens[10] == 10


def test_only_one_dimensional_arrays():
    with pytest.raises(ValueError):
        data.CountedReads(np.zeros((2, 3), dtype=np.uint16))
