"""What the judges' fork server imports once for a whole run, so that no judge pays for it again. Torch, the checks,
every exercise module of the course and what they import, and the judge itself. Nothing here runs a student's code;
it is imported by launch.context(), with preload_bitsandbytes.py where the run grades a notebook that needs it."""
from __future__ import annotations

import importlib
import pkgutil

import torch  # noqa: F401

import lecture2.exercises
from lecture2 import answers, checks  # noqa: F401
from lecture2_grader.judging import judge, link  # noqa: F401

for _info in pkgutil.iter_modules(lecture2.exercises.__path__):
    importlib.import_module(f"lecture2.exercises.{_info.name}")
