"""Before the first notebook of a run: what the sandbox sees, and a proof that it works. The packages the sandbox
sees, the font cache, and a proof that the student's process starts in its sandbox and imports this grader's
lecture2 (else every notebook would end early).

    package_dir()             the lecture2 the grader binds into every sandbox
    font_cache(folder)        matplotlib's font cache, built once outside the sandboxes
    check_package_binding()   SystemExit, with the fix, when the sandbox's Python would import another checkout's
    preflight(runtime)        a sandbox started for real; notes for the report, or SystemExit saying what to do
"""
from __future__ import annotations

import glob
import os
import subprocess
import sys
from pathlib import Path

from ..runtime import FONT_CACHE_SECONDS, PROBE_SECONDS, Runtime

def package_dir() -> Path:
    """The lecture2 package the grader's environment imports (bound read-only into every sandbox)."""
    import importlib.util

    spec = importlib.util.find_spec("lecture2")
    if spec is None or not spec.origin:
        raise SystemExit("error: the lecture2 package is not installed in this environment (run `make setup`)")
    return Path(spec.origin).resolve().parent


def font_cache(folder: Path) -> Path:
    """Matplotlib's font cache, built once outside the sandboxes and copied into each one."""
    cache = folder / "matplotlib-cache"
    cache.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-c", "import matplotlib.font_manager"], capture_output=True,
                   timeout=FONT_CACHE_SECONDS, env=dict(os.environ, MPLCONFIGDIR=str(cache)))
    return cache


# The cell the preflight runs in a student's process. torch is found, not imported (two seconds of a core in every
# grading run): a GPU is reached only through its device files (NVIDIA's, or ROCm's /dev/kfd), so where the sandbox
# has none there is no GPU to count, and where it has some, torch is imported to count them.
PREFLIGHT = '''
import glob, importlib.util, os, sys, lecture2
def _gpus():
    if not (glob.glob("/dev/nvidia[0-9]*") or os.path.exists("/dev/kfd")):
        return 0
    import torch
    return torch.cuda.device_count() if torch.cuda.is_available() else 0
def _preflight():
    return {"lecture2": lecture2.__file__, "python": sys.executable, "cuda": _gpus(),
            "torch": bool(importlib.util.find_spec("torch"))}
'''


ISOLATED_FIND = "import importlib.util as u; s = u.find_spec('lecture2'); print(s.origin if s and s.origin else '')"


def isolated_package() -> Path | None:
    """The lecture2 package this environment's Python imports in isolated mode (`-I`: no current folder, no
    PYTHONPATH), as the student's process does in its sandbox; None when it finds none."""
    proc = subprocess.run([sys.executable, "-I", "-c", ISOLATED_FIND], capture_output=True, text=True,
                          timeout=PROBE_SECONDS,
                          env={k: v for k, v in os.environ.items() if not k.startswith("PYTHON")})
    found = proc.stdout.strip()
    return Path(found).resolve().parent if proc.returncode == 0 and found else None


def _path_entries_naming(folder: Path) -> list[str]:
    """The site-packages .pth files of this environment that put `folder` on the path (an editable install)."""
    import site

    named = []
    for packages in {*site.getsitepackages(), site.getusersitepackages()}:
        for pth in sorted(Path(packages).glob("*.pth")):
            try:
                lines = pth.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                continue
            if any(line.strip() and Path(line.strip()).resolve() == folder for line in lines):
                named.append(str(pth))
    return named


def check_package_binding(package: Path) -> None:
    """SystemExit, saying what is wrong and how to fix it, unless the Python the sandbox runs imports the
    lecture2 at `package` (the one the grader binds into the sandbox) on its own. The usual failure: the grader
    runs from one checkout while this environment's editable install points at another, so the sandboxed
    interpreter would look for lecture2 where nothing is bound and every notebook would end early."""
    theirs = isolated_package()
    if theirs == package:
        return
    here = Path.cwd()
    if theirs is None:
        raise SystemExit(
            f"error: this environment's Python ({sys.executable}) does not find lecture2 on its own: the grader "
            f"found it at {package} only through the current folder or PYTHONPATH, which the sandboxed "
            "interpreter does not use, so every notebook would end early.\n"
            f"  Install it into the environment from the course folder: `{sys.executable} -m pip install -e "
            f"{package.parent}` (or `make setup` there).")
    via = _path_entries_naming(theirs.parent)
    raise SystemExit(
        f"error: the grader binds lecture2 from {package} into each sandbox, but this environment's Python "
        f"imports lecture2 from {theirs} on its own"
        + (f" (its editable install: {', '.join(via)})" if via else "") + ".\n"
        f"  The environment was installed from another checkout ({theirs.parent}) than the one the grader runs "
        f"from ({here}); inside the sandbox only {package} is there, so every notebook would end early.\n"
        f"  Either run the grader from {theirs.parent}, or reinstall the environment from this checkout: "
        f"`{sys.executable} -m pip install -e {package.parent}` (or `rm -rf .venv && make setup` there).")


def preflight(runtime: Runtime) -> list[str]:
    """Prove, before the first notebook, that the student's process starts in its sandbox and imports this
    grader's lecture2. Returns notes for the report; raises SystemExit saying what is wrong and how to fix it."""
    from lecture2 import answers

    from ..judging.link import KernelLink

    if runtime.package is not None:
        check_package_binding(runtime.package)
    link = KernelLink(runtime.preflight_spec())
    link.begin_test_cell()
    try:
        statuses = link.run_cells([{"index": 0, "at": 0.0, "kind": "code", "grade_id": None, "source": PREFLIGHT}])
        found = link.request("call", "_preflight", None, (), {}) if statuses and statuses[0].get("status") == "ok" else None
    except (answers.AnswerUnavailable, Exception) as err:  # noqa: BLE001  reported below with the process's output
        statuses, found = [{"status": "error", "message": str(err)}], None
    finally:
        link.close()
    where = "in its sandbox" if runtime.sandboxed else "without a sandbox"
    if not isinstance(found, dict):
        detail = (statuses[0].get("message") if statuses and isinstance(statuses[0], dict) else "") or ""
        tail = link.events.output_tail.strip().splitlines()[-6:]
        raise SystemExit(f"error: the student's process does not start {where}: {detail}\n"
                         + "\n".join(f"    {line}" for line in tail)
                         + "\n  The grader runs each notebook with this environment's Python "
                           f"({sys.executable}); check that `make setup` finished in this folder.")
    if not found.get("torch", True):
        raise SystemExit(f"error: the student's process finds no torch {where} ({sys.executable}): run `make setup` "
                         "in this folder")
    theirs = Path(str(found.get("lecture2"))).resolve().parent
    if theirs != runtime.package:
        raise SystemExit(
            f"error: inside the sandbox, Python imports lecture2 from {theirs}, but this grader's is {runtime.package}.\n"
            "  The environment's editable install points at another checkout: the sandbox sees only this course's\n"
            "  package, so every notebook would fail. Reinstall it from this folder (`.venv/bin/python -m pip\n"
            "  install -e .`, or `rm -rf .venv && make setup`), or run the grader from the checkout the\n"
            "  environment was made from.")
    notes = []
    cuda = int(found.get("cuda") or 0)
    here = len(glob.glob("/dev/nvidia[0-9]*"))  # this machine's NVIDIA GPUs, without importing torch here
    runtime.cuda = cuda > 0
    if here and not cuda:
        notes.append(f"the student's process cannot reach this machine's {here} GPU(s) {where}: grading on the CPU")
    return notes
