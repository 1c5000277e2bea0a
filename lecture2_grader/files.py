"""Files the grader writes and reads whole: one way to write a file so that a reader never sees half of it, and one
way to hash one without holding it. Every module of lecture2_grader and lecture2_hub that writes a file over another
writes it through `atomic_file`, `atomic_text` or `write_atomic` (tests/test_grade_files.py reads their code for any
other way); a file made new (O_EXCL), a log appended to and the kernel's cgroup files are written as they are."""
from __future__ import annotations

import contextlib
import hashlib
import io
import os
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, TextIO

OWNER_ONLY = 0o600  # a student's work, a roster, the hub's settings: readable by their owner alone
AS_OPEN = 0o666  # what open() asks for: the umask decides (0o644 under the usual 022), e.g. a zip to hand on


@contextlib.contextmanager
def atomic_file(path: Path, mode: int = OWNER_ONLY) -> Iterator[BinaryIO]:
    """A binary file to write `path` through, whole or not at all: a temporary file beside it, renamed over `path`
    when the block ends, removed when it raises. A reader sees the old file or the new one, never a part. `mode`: the
    permission bits asked for the new file (the umask still applies), set when it is created, never widened later."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _create_beside(path, mode)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def atomic_text(path: Path, mode: int = AS_OPEN) -> Iterator[TextIO]:
    """`atomic_file` as text: UTF-8, every line ending written as it is given (csv's own \\r\\n). `mode` as there
    (default: as open() would make it)."""
    with atomic_file(path, mode) as f, io.TextIOWrapper(f, encoding="utf-8", newline="") as text:
        yield text


def write_atomic(path: Path, data: bytes | str | Path, mode: int = OWNER_ONLY) -> None:
    """`data` (bytes, text as UTF-8, or the file at that path, copied in pieces) at `path`, whole or not at all (see
    `atomic_file`)."""
    with atomic_file(path, mode) as f:
        if isinstance(data, Path):
            with data.open("rb") as source:
                shutil.copyfileobj(source, f, 1 << 20)
        else:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)


def _create_beside(path: Path, mode: int) -> tuple[int, Path]:
    """A new file .<name>.<random>.tmp in `path`'s folder, created exclusively with `mode` (as tempfile.mkstemp, which
    always asks 0o600), never through a link; its descriptor and path."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    for _ in range(100):
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(tmp, flags, mode), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {path}")


def file_hash(path: Path) -> bytes:
    """SHA-256 of a file's bytes, read in pieces (a notebook may carry hundreds of MB of outputs)."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.digest()
