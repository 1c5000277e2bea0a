"""lecture2_grader.files: the one way the grader and the hub replace a file (a temporary file beside it, renamed)."""
from __future__ import annotations

import ast
import os
import stat

import pytest

from conftest import ROOT
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


# The kernel's control files of a cgroup: written in place, as the kernel reads them (they are no files on a disk).
CGROUP_WRITERS = {"lecture2_grader/sandbox.py", "lecture2_hub/limits.py"}


def _writes_in_place(node: ast.Call) -> str | None:
    """What a call writes a file with, other than through files.py (None for a call that does not)."""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if name in ("write_text", "write_bytes"):
        return name
    if name == "open":  # builtins.open(path, mode) or Path.open(mode)
        args = node.args[1:] if isinstance(func, ast.Name) else node.args
        mode = next((k.value for k in node.keywords if k.arg == "mode"), args[0] if args else None)
        if isinstance(mode, ast.Constant) and isinstance(mode.value, str) and "w" in mode.value:
            return f"open(..., {mode.value!r})"
    if name == "write" and isinstance(func, ast.Attribute) and getattr(func.value, "id", "") == "nbformat":
        return "nbformat.write"
    if name == "savefig" and node.args and not isinstance(node.args[0], ast.Name):
        return "savefig to a path"
    return None


def test_every_file_written_over_another_is_written_whole():
    """files.py's rule, read off the code: no module of the grader or the hub writes a file in place (a Ctrl-C or a
    full disk halfway would leave half a grades.csv, a feedback page or a roster); each goes through atomic_file,
    atomic_text or write_atomic. A file made new (O_EXCL), a log appended to and a cgroup's control files are not
    files written over another."""
    wrong = []
    for package in ("lecture2_grader", "lecture2_hub"):
        for path in sorted((ROOT / package).rglob("*.py")):
            where = path.relative_to(ROOT).as_posix()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                how = _writes_in_place(node) if isinstance(node, ast.Call) else None
                if how and not (where in CGROUP_WRITERS and how == "write_text"):
                    wrong.append(f"{where}:{node.lineno}: {how}")
    assert not wrong, "files written in place (use lecture2_grader.files):\n" + "\n".join(wrong)
