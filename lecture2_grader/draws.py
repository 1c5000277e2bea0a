"""The secret hidden cases are drawn from: the course's, and each student's made from it.

    <course>/.lecture2-draw-secret      32 random bytes (hex), made on the first `make grade`; owner-only (0600), never
                                        committed (.gitignore), never in a sandbox (the student's process sees nothing
                                        of the course folder)

A test cell draws its hidden cases with `lecture2.checks.drawn(label)`, in the judge, from the secret of the notebook it
runs for: HMAC-SHA256 of the course's secret and "<assignment>/<student>/<notebook>". Each student gets their own cases
(what leaks of one student's cases helps no one else), a regrade draws the same ones, and the reference is computed on
the same draws, in the same judge. The student's process receives the cases' inputs, never a seed.

Where there is no course (`make validate` on a student's machine, the lab), the judge has no secret: `drawn` makes one at
random, and validate runs the release's visible checks only, which draw nothing.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
from pathlib import Path

from . import ASSIGNMENT

SECRET_FILE = ".lecture2-draw-secret"


class SecretUnusable(Exception):
    """The course's secret file is there but cannot be trusted (not a plain file of this user, readable by others)."""


def course_secret(course: Path) -> bytes:
    """The course's draw secret, made on first use (a new file, owner-only; an existing one is never replaced)."""
    path = course / SECRET_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(secrets.token_hex(32) + "\n")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as err:
        raise SecretUnusable(f"{path} cannot be read ({err.strerror})") from None
    with os.fdopen(fd, "r", encoding="ascii", errors="replace") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
            raise SecretUnusable(f"{path} must be a file of yours that only you can read (chmod 600 {path})")
        text = f.read(200).strip()
    try:
        secret = bytes.fromhex(text)
    except ValueError:
        secret = b""
    if len(secret) < 16:
        raise SecretUnusable(f"{path} holds no secret (remove it: the next `make grade` makes a new one, and every "
                             "stored result is graded again)")
    return secret


def student_draw(secret: bytes, student: str, notebook: str) -> str:
    """The secret (hex) one student's notebook draws its hidden cases from."""
    message = f"{ASSIGNMENT}/{student}/{notebook.removesuffix('.ipynb')}".encode("utf-8")
    return hmac.new(secret, message, hashlib.sha256).hexdigest()
