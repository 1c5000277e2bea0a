"""What one student may use on the hub, in one place: the numbers, and how the machine holds each student to them.

    StudentLimits   memory, CPU, processes, disk, /tmp, kernels, idle time (and the exchange's size): the defaults,
                    `make hub HUB_LIMITS="memory=4GiB,cpus=2"` changes them (parse)
    StudentCgroup   a cgroup per student (cgroup v1 or v2): memory (every process of her server together, the pages
                    of her /tmp included), CPU time, processes and threads

The rest is held elsewhere, each by the machine: her home and the exchange are file systems of their own
(lecture2_hub.disks), her /tmp and /dev/shm memory file systems of `tmp` bytes in a mount namespace of her own
where she sees only her own processes (lecture2_hub.confine), her kernels by her server (lecture2_hub.kernels),
her idle server by jupyterhub-idle-culler (the hub's configuration).
"""
from __future__ import annotations

import hashlib
import os
import re
import time
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

from lecture2_grader.sandbox import own_cgroups

MiB, GiB = 2**20, 2**30
CGROUP_ROOT = Path("/sys/fs/cgroup")
CPU_PERIOD_US = 100_000  # the CFS period the CPU quota is a share of (the kernel's default)


@dataclass(frozen=True)
class StudentLimits:
    """What each student's server may use; every field a bound the machine enforces (units in the names' comments)."""

    memory: int = 2 * GiB  # bytes: every process of her server together, her /tmp and /dev/shm included (cgroup)
    cpus: float = 1.0  # cores: her processes together get at most this much CPU time (cgroup CPU quota)
    processes: int = 256  # processes and threads together (cgroup pids): a fork bomb ends here
    disk: int = 2 * GiB  # bytes: her home is a file system of this size (an ext4 image); 0: her home shares the disk
    tmp: int = 512 * MiB  # bytes: her /tmp, and her /dev/shm, memory file systems of her own (counted in memory)
    kernels: int = 3  # kernels running at once in her lab
    idle: int = 3600  # seconds: a server without activity this long is stopped (jupyterhub-idle-culler); 0: never
    exchange: int = 8 * GiB  # bytes: the exchange, a file system of its own made at its first start (the class's)

    def describe(self) -> str:
        return (f"{_size(self.memory)} memory, {self.cpus:g} CPU, {self.processes} processes, {_size(self.disk) if self.disk else 'no'}"
                f" disk of her own, {_size(self.tmp)} /tmp, {self.kernels} kernels, "
                + (f"stopped after {self.idle // 60} min idle" if self.idle else "never stopped when idle"))

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> StudentLimits:
        return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})


class LimitsError(ValueError):
    """A HUB_LIMITS text that cannot be read; the message says what a part must be."""


_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "kib": 2**10, "m": 10**6, "mb": 10**6, "mib": MiB,
          "g": 10**9, "gb": 10**9, "gib": GiB, "t": 10**12, "tb": 10**12, "tib": 2**40}
_SIZES = {"memory", "disk", "tmp", "exchange"}


def _size(n: int) -> str:
    return f"{n / GiB:g} GiB" if n >= GiB else f"{n / MiB:g} MiB"


def parse(text: str, base: StudentLimits | None = None) -> StudentLimits:
    """`memory=4GiB,cpus=2,processes=512,disk=1GiB,tmp=256MiB,kernels=2,idle=1800,exchange=16GiB` (any of them, in
    any order) over `base` (the defaults). Sizes take B, KiB, MiB, GiB, TiB (or kB, MB, GB: powers of ten)."""
    limits = base or StudentLimits()
    names = {f.name for f in fields(StudentLimits)}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        key, value = key.strip().lower(), value.strip()
        if not sep or key not in names:
            raise LimitsError(f"{part!r}: each part is NAME=VALUE, NAME one of {', '.join(sorted(names))}")
        if key in _SIZES:
            m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([a-zA-Z]*)", value)
            if not m or m.group(2).lower() not in _UNITS:
                raise LimitsError(f"{part!r}: a size is a number and a unit, e.g. {key}=2GiB or {key}=512MiB")
            number = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
        else:
            try:
                number = float(value) if key == "cpus" else int(value)
            except ValueError:
                raise LimitsError(f"{part!r}: {key} is a {'number' if key == 'cpus' else 'whole number'}") from None
        if number < 0 or (number == 0 and key in ("memory", "cpus", "processes", "tmp", "kernels")):
            raise LimitsError(f"{part!r}: {key} must be above 0")
        limits = replace(limits, **{key: number})
    if limits.memory < 256 * MiB or limits.processes < 32:
        raise LimitsError("a lab needs at least memory=256MiB and processes=32 to start")
    if limits.disk and limits.disk < 16 * MiB:
        raise LimitsError("disk: at least 16MiB (or 0: homes share the machine's disk)")
    return limits


# ---- cgroups: one per student, in a folder per hub

@dataclass(frozen=True)
class StudentCgroup:
    """The cgroup(s) of one student's server: one folder (v2) or one per controller (v1: memory, pids, cpu)."""

    paths: tuple[Path, ...]
    version: int

    def enter(self, pid: int | None = None) -> None:
        """Put process `pid` (default: the caller; the spawner calls it in the child, before exec) into the cgroup."""
        for path in self.paths:
            (path / "cgroup.procs").write_text(str(pid or os.getpid()))

    def pids(self) -> set[int]:
        found: set[int] = set()
        for path in self.paths:
            try:
                found |= {int(p) for p in (path / "cgroup.procs").read_text().split()}
            except (OSError, ValueError):
                pass
        return found

    def memory_events(self) -> dict[str, int]:
        """The memory controller's counters (v2 memory.events; v1: max_usage and failcnt)."""
        for path in self.paths:
            try:
                if self.version == 2:
                    return {k: int(v) for k, v in (ln.split() for ln in (path / "memory.events").read_text().splitlines())}
                if (path / "memory.failcnt").exists():
                    return {"failcnt": int((path / "memory.failcnt").read_text()),
                            "max_usage": int((path / "memory.max_usage_in_bytes").read_text())}
            except (OSError, ValueError):
                continue
        return {}


def hub_cgroup_name(state: Path) -> str:
    """The folder of a hub's student cgroups (one hub of a state folder: its own name)."""
    return "lecture2-hub-" + hashlib.sha256(str(state).encode()).hexdigest()[:10]


def cgroup_problem() -> str | None:
    """Why this machine cannot hold students to memory, CPU and process limits here (no cgroups we may make), or
    None."""
    if os.geteuid() != 0:
        return "cgroups are made by root"
    if (CGROUP_ROOT / "cgroup.controllers").exists():
        have = set((CGROUP_ROOT / "cgroup.controllers").read_text().split())
        missing = {"memory", "pids", "cpu"} - have
        return f"the cgroup v2 controllers {', '.join(sorted(missing))} are not available" if missing else None
    missing = [c for c in ("memory", "pids", "cpu") if not (CGROUP_ROOT / c).is_dir()]
    return f"the cgroup v1 controllers {', '.join(missing)} are not mounted under {CGROUP_ROOT}" if missing else None


def _v2_parent(hub: str) -> Path:
    """The hub's folder in the v2 hierarchy, its controllers enabled for the students' folders below it. It sits at
    the root: a cgroup with processes in it (the one `make hub` runs in) cannot pass controllers to children."""
    parent = CGROUP_ROOT / hub
    parent.mkdir(exist_ok=True)
    for folder in (CGROUP_ROOT, parent):
        enabled = set((folder / "cgroup.subtree_control").read_text().split())
        for controller in ("memory", "pids", "cpu"):
            if controller not in enabled:
                (folder / "cgroup.subtree_control").write_text(f"+{controller}")
    return parent


def student_cgroup(state: Path, name: str, limits: StudentLimits) -> StudentCgroup:
    """The student's cgroup, made (or found again, its limits set anew) for her server. OSError where the machine
    refuses (cgroup_problem says why beforehand)."""
    hub = hub_cgroup_name(state)
    quota = max(1000, int(limits.cpus * CPU_PERIOD_US))
    if (CGROUP_ROOT / "cgroup.controllers").exists():
        path = _v2_parent(hub) / name
        path.mkdir(exist_ok=True)
        (path / "memory.max").write_text(str(limits.memory))
        if (path / "memory.swap.max").exists():
            (path / "memory.swap.max").write_text("0")
        (path / "pids.max").write_text(str(limits.processes))
        (path / "cpu.max").write_text(f"{quota} {CPU_PERIOD_US}")
        return StudentCgroup((path,), 2)
    own = own_cgroups()
    paths = []
    for controller in ("memory", "pids", "cpu"):
        path = CGROUP_ROOT / controller / own.get(controller, "/").lstrip("/") / hub / name
        path.mkdir(parents=True, exist_ok=True)
        paths.append(path)
    memory, pids, cpu = paths
    (memory / "memory.limit_in_bytes").write_text(str(limits.memory))
    if (memory / "memory.memsw.limit_in_bytes").exists():  # swap accounting on: no swap beyond the memory
        try:
            (memory / "memory.memsw.limit_in_bytes").write_text(str(limits.memory))
        except OSError:
            pass
    (pids / "pids.max").write_text(str(limits.processes))
    (cpu / "cpu.cfs_period_us").write_text(str(CPU_PERIOD_US))
    (cpu / "cpu.cfs_quota_us").write_text(str(quota))
    return StudentCgroup(tuple(paths), 1)


def hub_cgroups(state: Path) -> list[Path]:
    """Every folder of this hub's student cgroups (its own folder last), for removal when the hub stops."""
    hub = hub_cgroup_name(state)
    if (CGROUP_ROOT / "cgroup.controllers").exists():
        tops = [CGROUP_ROOT / hub]
    else:
        own = own_cgroups()
        tops = [CGROUP_ROOT / c / own.get(c, "/").lstrip("/") / hub for c in ("memory", "pids", "cpu")]
    return [p for top in tops if top.is_dir() for p in [*sorted(d for d in top.iterdir() if d.is_dir()), top]]


def remove_cgroups(state: Path, wait: float = 5.0) -> list[Path]:
    """Remove this hub's cgroups (their processes must be gone: a cgroup with processes cannot be removed); the
    ones left."""
    left = []
    for path in hub_cgroups(state):
        deadline = time.monotonic() + wait
        while True:
            try:
                path.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                if time.monotonic() > deadline:
                    left.append(path)
                    break
                time.sleep(0.05)
    return left
