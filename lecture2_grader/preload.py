"""What the judges' fork server imports once for a whole run, so that no judge pays for it again: torch, the checks,
every exercise module of the course and what they import, and the judge itself. bitsandbytes (notebook 06's 8-bit
Adam, two seconds to import) only where there is no NVIDIA GPU: it may initialise CUDA as it loads, and a process
forked after that cannot use CUDA. Nothing here runs a student's code; it is imported by judges.context()."""
from __future__ import annotations

import glob
import importlib
import logging
import pkgutil

import torch  # noqa: F401

import lecture2.exercises
from lecture2 import answers, checks  # noqa: F401
from lecture2_grader import judge, link  # noqa: F401

for _info in pkgutil.iter_modules(lecture2.exercises.__path__):
    importlib.import_module(f"lecture2.exercises.{_info.name}")

if not glob.glob("/dev/nvidia[0-9]*"):
    logging.getLogger("bitsandbytes").setLevel(logging.ERROR)
    try:
        import bitsandbytes  # noqa: F401
    except Exception:  # noqa: BLE001  not installed, or it fails here: the check that needs it imports it and says so
        pass
