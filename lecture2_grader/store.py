"""Stage 4b: the judge's results, kept per student and notebook, so that a regrade runs only what changed.

    autograded/<student>/lec02/<notebook>.result.json    {"key": ..., "judged": {...}, "seconds": ..., "at": ...}

A notebook is run again only when its key changes. The key is the content hash of the things a result
depends on: the student's submitted file (its bytes), the instructor's notebook and its release, the code
that grades it (every file of the lecture2 package, its profiles' JSON included, and this grader's judging
modules), the run's limits (Runtime.judging_key: time limits, the sandbox's memory and sizes, threads, GPU) and the
secret the notebook's hidden cases are drawn from (draws.py: the same for every run of the course). Anything else (a file's modification time, another
notebook, another student) does not run it again. Every outcome is stored, a notebook's failure too (its cause:
"time limit", "crash"; a protocol error or a stopped process is part of the judge's results), so that a submission
that stalls its judge costs the class once, not at every `make grade`. Only a notebook the executor lost (a worker
that died) is not stored: that was not the notebook's doing. `make grade` reuses a stored result whose key matches;
`--regrade` ignores them. A result is written atomically (a temporary file, then a rename) as soon as its
notebook is judged, so a run that is killed halfway leaves whole results, and the next run picks up there.
"""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

from . import ASSIGNMENT
from .files import file_hash, write_atomic  # noqa: F401  (file_hash: the key's input)
from .records import Judged


def key(submission: bytes, notebook_digest: str, code_digest: str, draw: str = "") -> str:
    """The cache key of one student's notebook: what its result depends on, hashed (`submission`: the submitted
    file's SHA-256, from file_hash; `draw`: the secret its hidden cases are drawn from, draws.py)."""
    return hashlib.sha256(submission + notebook_digest.encode() + b"\0" + code_digest.encode() + b"\0"
                          + draw.encode()).hexdigest()


class Store:
    def __init__(self, course: Path):
        self.root = course / "autograded"

    def _path(self, student: str, stem: str) -> Path:
        return self.root / student / ASSIGNMENT / f"{stem}.result.json"

    def get(self, student: str, stem: str, key: str) -> Judged | None:
        """The stored run of this notebook if it was made with this key, else None."""
        try:
            data = json.loads(self._path(student, stem).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("key") != key or not isinstance(data.get("judged"), dict):
            return None
        return Judged.from_json(data["judged"])

    def put(self, student: str, stem: str, key: str, judged: Judged, seconds: float) -> None:
        write_atomic(self._path(student, stem), json.dumps(
            {"key": key, "judged": judged.to_json(), "seconds": round(seconds, 3),
             "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, ensure_ascii=False))
