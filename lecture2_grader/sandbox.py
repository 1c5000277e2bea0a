"""The wall around a student's process: one bubblewrap sandbox per notebook run.

Inside, the student's code sees the Python environment, the `lecture2` package and the kernel script, all
read-only, and a few files of /etc and /usr. It can write only fixed-size memory filesystems: /tmp (its
working folder is /tmp/work) and /dev/shm; /dev and the sandbox's own root are read-only, and nothing of the
host's disk is writable. It has no network but loopback, its own PID, IPC, UTS and mount namespaces (it can neither see nor
signal the grader, the judge or another student), a new terminal session, no capabilities, and, when bubblewrap
runs as root, the uid `nobody`.

Resources. Where the machine lets the grader make cgroups (root, cgroup v1 or v2 with the memory and pids
controllers), every process of the run is in one cgroup: `memory` bounds all of their memory together, the
pages they write to /tmp and /dev/shm included, and `pids` bounds how many there are. Elsewhere `memory` is
each process's address space (RLIMIT_AS) and the memory filesystems add at most their sizes. `confinement()`
says which holds here. A hard wall-clock limit kills the whole PID namespace; `Run.kill` returns only when
every process of the run is dead.

Without bubblewrap, grading refuses to run unless the instructor passes `--unsafe-no-sandbox`.
"""
from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

BWRAP = "bwrap"
NOBODY = 65534
WORK = "/tmp/work"  # the student's process's working folder (on the /tmp tmpfs)
# The parts of /etc a Python process needs: the loader, fonts, users and hosts (for getpass and gloo).
ETC = ["ld.so.cache", "ld.so.conf", "ld.so.conf.d", "fonts", "localtime", "passwd", "group", "nsswitch.conf",
       "hosts", "host.conf", "gai.conf", "mime.types", "alternatives", "os-release"]


class SandboxUnavailable(Exception):
    """bubblewrap is missing or cannot create namespaces here; the message says what to do."""


@dataclass
class Limits:
    """What one notebook's student process may use (bytes, seconds, counts)."""

    memory: int | None = 6 * 2**30  # every process together (cgroup) or each one (RLIMIT_AS)
    tmp: int = 512 * 2**20  # /tmp, a memory filesystem
    shm: int = 64 * 2**20  # /dev/shm, a memory filesystem
    pids: int = 512  # processes and threads (cgroup pids), or RLIMIT_NPROC for a user other than root
    file_size: int = 256 * 2**20  # the largest file it may write (RLIMIT_FSIZE)
    threads: int = 1  # OMP_NUM_THREADS and MKL_NUM_THREADS


def limit_data(limit: int | None) -> None:
    """At most `limit` bytes more of this process's data (heap and anonymous maps: RLIMIT_DATA) than it holds now;
    None: no limit. For the grader's own processes that handle a student's data (a reader, a judge): past it, an
    allocation fails with MemoryError in that process, never the machine. A mapped file is not data, and a CUDA
    driver's reservations are not either."""
    if limit is None:
        return
    import resource

    held = 0
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            held = next((int(line.split()[1]) * 1024 for line in f if line.startswith("VmData:")), 0)
    except (OSError, ValueError):
        pass
    try:  # the soft limit only: the student's process this one starts takes its own limits (_limits_in_child)
        resource.setrlimit(resource.RLIMIT_DATA, (held + limit, resource.getrlimit(resource.RLIMIT_DATA)[1]))
    except (ValueError, OSError):
        pass


def check_available() -> None:
    """Raise SandboxUnavailable unless bubblewrap runs a command in fresh namespaces here."""
    path = shutil.which(BWRAP)
    if path is None:
        raise SandboxUnavailable(
            "bubblewrap (bwrap) is not installed: grading runs every student's code in a bubblewrap sandbox. "
            "Install it (Debian/Ubuntu: `sudo apt-get install bubblewrap`; Fedora: `sudo dnf install bubblewrap`), "
            "or, only for submissions you trust, pass --unsafe-no-sandbox.")
    probe = subprocess.run([path, *_namespaces(), "--ro-bind", "/", "/", "--proc", "/proc", "true"],
                           capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        raise SandboxUnavailable(
            f"bubblewrap is installed but cannot create a sandbox here ({probe.stderr.strip()[:200]}). "
            "Unprivileged user namespaces may be disabled (sysctl kernel.unprivileged_userns_clone=1, or run "
            "as root), or pass --unsafe-no-sandbox for submissions you trust.")


def _as_root() -> bool:
    return os.geteuid() == 0


def _namespaces() -> list[str]:
    """A user namespace in which the student is `nobody` with no capabilities, and fresh PID, IPC, network,
    UTS and cgroup namespaces. (As root, bwrap would keep capabilities without a user namespace.)"""
    return ["--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-net", "--unshare-uts",
            "--unshare-cgroup-try", "--uid", str(NOBODY), "--gid", str(NOBODY), "--hostname", "sandbox",
            "--die-with-parent", "--new-session", *(["--cap-drop", "ALL"] if _as_root() else [])]


def _ro_binds(paths: list[Path]) -> list[str]:
    args, seen = [], set()
    for path in paths:
        real = str(Path(path).resolve())
        if real in seen or not Path(real).exists():
            continue
        seen.add(real)
        args += ["--ro-bind", real, real]
        if str(path) != real and not Path(path).is_symlink():
            args += ["--ro-bind", real, str(path)]
    return args


def gpu_devices() -> list[str]:
    """bwrap arguments that give the sandbox the machine's NVIDIA devices (CUDA needs them), if any."""
    devices = sorted(str(p) for p in Path("/dev").glob("nvidia*") if not p.is_dir())
    if not devices:
        return []
    args = [arg for d in devices for arg in ("--dev-bind", d, d)]
    for folder in ("/dev/nvidia-caps", "/proc/driver/nvidia", "/sys"):
        if Path(folder).exists():
            args += ["--ro-bind", folder, folder] if not folder.startswith("/dev") else ["--dev-bind", folder, folder]
    return args


def command(argv: list[str], *, binds: list[Path], env: dict[str, str], limits: Limits) -> list[str]:
    """The bwrap command line that runs `argv` confined (binds: read-only paths it may see)."""
    root_links = []
    for name in ("bin", "lib", "lib64", "lib32", "sbin"):
        p = Path("/") / name
        if p.is_symlink():
            root_links += ["--symlink", os.readlink(p), f"/{name}"]
        elif p.is_dir():
            root_links += ["--ro-bind", str(p), f"/{name}"]
    etc = []
    for name in ETC:
        p = Path("/etc") / name
        if p.exists():
            etc += ["--ro-bind", str(p), str(p)]
    setenv = [arg for k, v in env.items() for arg in ("--setenv", k, v)]
    return [
        BWRAP, *_namespaces(), "--clearenv", *setenv,
        "--ro-bind", "/usr", "/usr", *root_links, *etc,
        "--size", str(limits.tmp), "--tmpfs", "/tmp",  # before the course's binds: a course under /tmp stays seen
        *_ro_binds([Path(sys.base_prefix), Path(sys.prefix), *binds]),
        "--proc", "/proc", "--dev", "/dev", "--size", str(limits.shm), "--tmpfs", "/dev/shm", *gpu_devices(),
        "--remount-ro", "/dev", "--dir", WORK,
        "--remount-ro", "/",  # bwrap's own root (the folders it made for the binds) is a memory filesystem too
        "--chdir", WORK,
        *argv,
    ]


def environment(threads: int, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The only environment variables the student's process gets."""
    python = Path(sys.executable)
    return {
        "PATH": f"{python.parent}:/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8",
        "TMPDIR": "/tmp", "MPLCONFIGDIR": "/tmp/matplotlib", "XDG_CACHE_HOME": "/tmp/cache",
        "NBGRADER_EXECUTION": "autograde", "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads),
        "GLOO_SOCKET_IFNAME": "lo", "MASTER_ADDR": "127.0.0.1", **(extra or {}),
    }


# ---- cgroups: one per run, where the machine lets us make them


@dataclass
class Cgroup:
    """A cgroup (v2) or a pair of them (v1 memory and pids) holding every process of one run."""

    paths: list[Path]
    version: int
    memory: Path | None = None  # the folder with the memory controller's files

    def enter(self) -> None:
        """Put the calling process into the cgroup (called in the child, before exec)."""
        for path in self.paths:
            (path / "cgroup.procs").write_text(str(os.getpid()))

    def oom_killed(self) -> bool:
        """Did the memory limit kill a process of the run?"""
        try:
            if self.version == 2:
                events = (self.memory / "memory.events").read_text()
                return any(line.split()[0] == "oom_kill" and int(line.split()[1]) > 0 for line in events.splitlines())
            return int((self.memory / "memory.failcnt").read_text()) > 0 and _v1_oom_kills(self.memory) > 0
        except (OSError, ValueError, IndexError):
            return False

    def kill_all(self) -> None:
        for path in self.paths:
            try:
                if self.version == 2 and (path / "cgroup.kill").exists():
                    (path / "cgroup.kill").write_text("1")
                else:
                    for pid in (path / "cgroup.procs").read_text().split():
                        try:
                            os.kill(int(pid), signal.SIGKILL)
                        except (ProcessLookupError, ValueError):
                            pass
            except OSError:
                pass

    def remove(self) -> None:
        for path in self.paths:
            for _ in range(50):
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # processes still leaving
                    time.sleep(0.02)


def _v1_oom_kills(memory: Path) -> int:
    try:
        for line in (memory / "memory.oom_control").read_text().splitlines():
            if line.startswith("oom_kill "):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 1  # older kernels have no counter: a failed charge is taken as the limit reached


def own_cgroups() -> dict[str, str]:
    """controller (or "" for v2) -> this process's cgroup path, from /proc/self/cgroup."""
    found = {}
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for c in (controllers.split(",") if controllers else [""]):
                found[c] = path
    except (OSError, ValueError):
        pass
    return found


def make_cgroup(limits: Limits) -> Cgroup | None:
    """A fresh cgroup with `limits.memory` and `limits.pids`, or None where this machine does not allow it."""
    if not _as_root() or os.environ.get("LECTURE2_NO_CGROUPS"):
        return None
    name = f"lecture2-grade-{uuid.uuid4().hex[:12]}"
    own = own_cgroups()
    root = Path("/sys/fs/cgroup")
    made: list[Path] = []
    try:
        if (root / "cgroup.controllers").exists():  # v2, unified
            parent = root / own.get("", "/").lstrip("/")
            wanted = {"memory", "pids"}
            if not wanted <= set((parent / "cgroup.controllers").read_text().split()):
                return None
            path = parent / name
            path.mkdir()
            made.append(path)
            if limits.memory:
                (path / "memory.max").write_text(str(limits.memory))
                (path / "memory.swap.max").write_text("0") if (path / "memory.swap.max").exists() else None
            (path / "pids.max").write_text(str(limits.pids))
            return Cgroup([path], 2, path)
        memory_root, pids_root = root / "memory", root / "pids"
        if not (memory_root.is_dir() and pids_root.is_dir()):
            return None
        memory = memory_root / own.get("memory", "/").lstrip("/") / name
        pids = pids_root / own.get("pids", "/").lstrip("/") / name
        memory.mkdir()
        made.append(memory)
        pids.mkdir()
        made.append(pids)
        if limits.memory:
            (memory / "memory.limit_in_bytes").write_text(str(limits.memory))
        (pids / "pids.max").write_text(str(limits.pids))
        return Cgroup([memory, pids], 1, memory)
    except OSError:
        for path in made:
            try:
                path.rmdir()
            except OSError:
                pass
        return None


def confinement(limits: Limits | None = None) -> str:
    """One line for the report: how memory and processes are bounded on this machine."""
    limits = limits or Limits()
    group = make_cgroup(limits)
    if group is not None:
        group.remove()
        return (f"cgroup v{group.version}: all of a notebook's processes together, /tmp and /dev/shm included, "
                f"within {_size(limits.memory)}, at most {limits.pids} processes")
    return (f"no cgroups here: each process within {_size(limits.memory)} of address space (RLIMIT_AS), plus at most "
            f"{_size(limits.tmp + limits.shm)} of memory filesystems")


def _size(n: int | None) -> str:
    return "no limit" if not n else f"{n / 2**30:g} GiB" if n >= 2**30 else f"{n / 2**20:g} MiB"


# ---- a run


def _limits_in_child(limits: Limits, group: Cgroup | None):
    gpu = bool(gpu_devices())

    def apply():  # in the child, before exec: inherited by everything in the sandbox
        if group is not None:
            group.enter()
        # each process's address space too (an early MemoryError the student sees), except where CUDA runs:
        # its driver reserves far more address space than it uses
        if limits.memory and not (gpu and group is not None):
            resource.setrlimit(resource.RLIMIT_AS, (limits.memory, limits.memory))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_size, limits.file_size))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        data_hard = resource.getrlimit(resource.RLIMIT_DATA)[1]  # not the judge's own data limit (limit_data)
        resource.setrlimit(resource.RLIMIT_DATA, (data_hard, data_hard))
        if not _as_root():
            resource.setrlimit(resource.RLIMIT_NPROC, (limits.pids, limits.pids))
    return apply


@dataclass
class Run:
    """A started sandboxed (or, for trusted submissions, plain) process and everything it started."""

    proc: subprocess.Popen
    group: Cgroup | None
    init_pid: int | None
    scratch: str | None = None  # the working folder of an unsandboxed run, removed with it
    started: float = field(default_factory=time.monotonic)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL the sandbox's pid 1 (the kernel then kills its whole PID namespace), the cgroup's processes,
        bwrap and its process group; return when pid 1 is gone and the cgroup is removed."""
        if self.init_pid:
            try:
                os.kill(self.init_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.group is not None:
            self.group.kill_all()
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()
        deadline = time.monotonic() + 30
        while self.init_pid and time.monotonic() < deadline:
            try:
                with open(f"/proc/{self.init_pid}/stat", "rb") as f:
                    state = f.read().rsplit(b")", 1)[-1].split()[0]
                if state == b"Z":
                    break  # a zombie: its namespace is already empty
            except (FileNotFoundError, ProcessLookupError, IndexError):
                break
            time.sleep(0.01)
        if self.group is not None:
            self.group.kill_all()
            self.group.remove()
        if self.scratch:
            shutil.rmtree(self.scratch, ignore_errors=True)

    def oom_killed(self) -> bool:
        return self.group is not None and self.group.oom_killed()


def start(argv: list[str], *, binds: list[Path], limits: Limits, sandboxed: bool = True,
          stdin: int, stdout: int, pass_fds: tuple[int, ...] = (), env: dict[str, str] | None = None) -> Run:
    """Start `argv` (argv[0] the environment's Python) confined, with stdin/stdout (stderr with stdout) on the
    given descriptors, `pass_fds` inherited and `env` added to its environment. The caller closes its copies
    of the child's descriptors."""
    group = make_cgroup(limits) if sandboxed else None
    extra = {k: v for k, v in (env or {}).items() if v}
    if not sandboxed:  # trusted submissions (and a student's own `make validate`): a scratch folder, no walls
        import tempfile
        scratch = tempfile.mkdtemp(prefix="lecture2-kernel-")
        env = dict(os.environ, **environment(limits.threads, extra))
        env.update(MPLCONFIGDIR=os.path.join(scratch, ".matplotlib"), HOME=os.environ.get("HOME", scratch),
                   TMPDIR=os.environ.get("TMPDIR", tempfile.gettempdir()))
        proc = subprocess.Popen(argv, stdin=stdin, stdout=stdout, stderr=subprocess.STDOUT, pass_fds=pass_fds,
                                cwd=scratch, start_new_session=True, env=env, preexec_fn=_limits_in_child(limits, None))
        return Run(proc, None, None, scratch=scratch)
    info_read, info_write = os.pipe()
    try:
        full = command(["--info-fd", str(info_write), *argv], binds=binds, env=environment(limits.threads, extra),
                       limits=limits)
        proc = subprocess.Popen(full, stdin=stdin, stdout=stdout, stderr=subprocess.STDOUT,
                                pass_fds=(*pass_fds, info_write), start_new_session=True,
                                preexec_fn=_limits_in_child(limits, group))
    except BaseException:
        os.close(info_read)
        if group is not None:
            group.remove()
        raise
    finally:
        os.close(info_write)
    return Run(proc, group, _read_init_pid(info_read))


def _read_init_pid(fd: int) -> int | None:
    """bwrap's --info-fd JSON: {"child-pid": N} is the sandbox's pid 1 as seen from here."""
    data = b""
    try:
        while b"}" not in data:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            data += chunk
    finally:
        os.close(fd)
    try:
        return int(json.loads(data.decode())["child-pid"])
    except (ValueError, KeyError, TypeError):
        return None
