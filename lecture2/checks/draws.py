"""Hidden cases: drawn from a secret the student's process never holds (`drawn`, `drawing_from`)."""
from __future__ import annotations

import hashlib
import os
import random
import secrets
from contextlib import contextmanager

DRAW_SECRET_ENV = "LECTURE2_DRAW_SECRET"  # hex: the secret of a process that was given none (to repeat a run's draws)
_DRAW_SECRET: bytes | None = None  # the secret of the test cells running now (`drawing_from`), else this process's own


def drawn(label: str) -> random.Random:
    """The random.Random a test cell's hidden cases are drawn from: seeded from the secret of this run (`drawing_from`:
    under the course's grader, one made from the course's secret and the student's id, in the judge, so each student
    gets their own cases and a regrade the same ones) and `label`, which names the draw within the notebook (e.g.
    "tensor_bytes: drawn shapes": two draws with one label are the same cases). The seed never leaves this process:
    the student's process receives the cases' inputs only. With no secret given (the lab, `make validate`, nbval),
    one is made at random once per process ($LECTURE2_DRAW_SECRET, in hex, repeats a run's draws)."""
    global _DRAW_SECRET
    if _DRAW_SECRET is None:
        given = os.environ.get(DRAW_SECRET_ENV, "")
        try:
            _DRAW_SECRET = bytes.fromhex(given) if given else secrets.token_bytes(32)
        except ValueError:
            raise ValueError(f"${DRAW_SECRET_ENV} must be hex digits") from None
    seed = hashlib.sha256(_DRAW_SECRET + b"\0" + str(label).encode("utf-8")).digest()
    return random.Random(int.from_bytes(seed, "big"))


@contextmanager
def drawing_from(secret: str | bytes | None):
    """While the block runs, `drawn` seeds from `secret` (hex text or bytes; None keeps this process's own)."""
    global _DRAW_SECRET
    saved = _DRAW_SECRET
    if secret is not None:
        _DRAW_SECRET = bytes.fromhex(secret) if isinstance(secret, str) else bytes(secret)
    try:
        yield
    finally:
        _DRAW_SECRET = saved
