"""lecture2_grader.files: the one way the grader and the hub replace a file (a temporary file beside it, renamed)."""
from __future__ import annotations

import os
import stat

import pytest

from lecture2_grader.files import AS_OPEN, atomic_file, file_hash, write_atomic


def test_a_write_that_fails_leaves_the_old_file_and_nothing_beside_it(tmp_path):
    """Does a reader see the old file or the new one, never a part, and does a failed write leave no .tmp behind?"""
    path = tmp_path / "deep" / "result.json"
    write_atomic(path, "old")
    with pytest.raises(RuntimeError), atomic_file(path) as f:
        f.write(b"half of the new")
        raise RuntimeError("the disk is full")
    assert path.read_text() == "old" and os.listdir(path.parent) == ["result.json"]
    source = tmp_path / "big.ipynb"
    source.write_bytes(os.urandom(3 << 20))  # a file is copied in pieces, whole
    write_atomic(path, source)
    assert file_hash(path) == file_hash(source) and os.listdir(path.parent) == ["result.json"]


def test_a_file_is_owner_only_unless_asked_otherwise_and_the_umask_still_applies(tmp_path):
    """Is a student's work or a roster readable by its owner alone from the moment it exists, and a hand-in zip as
    readable as any file the student saves (the umask decides)?"""
    write_atomic(tmp_path / "roster.csv", b"name,role\n")
    old = os.umask(0o022)
    try:
        write_atomic(tmp_path / "handin.zip", b"PK", AS_OPEN)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "roster.csv").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "handin.zip").stat().st_mode) == 0o644
