"""Files the grader writes and reads whole: one way to write a file so that a reader never sees half of it, and one
way to hash one without holding it."""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path


def write_atomic(path: Path, data: bytes | str | Path) -> None:
    """`data` (bytes, text as UTF-8, or the file at that path, copied in pieces) at `path`, whole or not at all: a
    temporary file beside it, then a rename. A reader sees the old file or the new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            if isinstance(data, Path):
                with data.open("rb") as source:
                    shutil.copyfileobj(source, f, 1 << 20)
            else:
                f.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def file_hash(path: Path) -> bytes:
    """SHA-256 of a file's bytes, read in pieces (a notebook may carry hundreds of MB of outputs)."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.digest()
