"""Stage 3: one bubblewrap sandbox per notebook run, the trust boundary of grading.

Inside, a student's code sees: its own scratch folder (the only writable place besides a private /tmp),
the Python environment, the `lecture2` package and the runner, all read-only, and a few files of /etc and
/usr. It has no network but loopback, its own PID, IPC, UTS and mount namespaces (it can neither see nor
signal the grader or another student), a new terminal session, no capabilities, and when bubblewrap runs
as root, the uid `nobody`. Its address space, file sizes and (as root) process count are limited, and a hard
wall-clock limit kills the whole PID namespace; `run` returns only once the namespace's init is gone, so
every process the student started is dead before anything of it is read.

Without bubblewrap, `make grade` refuses to run unless the instructor passes `--unsafe-no-sandbox`.
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
from dataclasses import dataclass
from pathlib import Path

BWRAP = "bwrap"
SANDBOX_DIR = "/grading"  # where the scratch folder appears inside
NOBODY = 65534
# The parts of /etc a Python process needs: the loader, fonts, users and hosts (for getpass and gloo).
ETC = ["ld.so.cache", "ld.so.conf", "ld.so.conf.d", "fonts", "localtime", "passwd", "group", "nsswitch.conf",
       "hosts", "host.conf", "gai.conf", "mime.types", "alternatives", "os-release"]


class SandboxUnavailable(Exception):
    """bubblewrap is missing or cannot create namespaces here; the message says what to do."""


@dataclass
class Outcome:
    """How the sandboxed run ended."""

    returncode: int | None
    seconds: float
    timed_out: bool  # killed at the wall-clock limit

    @property
    def crashed(self) -> bool:
        return not self.timed_out and (self.returncode or 0) != 0


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


def command(scratch: Path, runner: Path, runner_args: list[str], fds: tuple[int, int], *, package: Path,
            tmp_bytes: int, threads: int, info_fd: int) -> list[str]:
    """The bwrap command line that runs `python runner.py ARGS` confined to `scratch`."""
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
    python = Path(sys.executable)
    env = {
        "PATH": f"{python.parent}:/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8",
        "TMPDIR": "/tmp", "MPLCONFIGDIR": f"{SANDBOX_DIR}/.matplotlib", "XDG_CACHE_HOME": "/tmp/cache",
        "NBGRADER_EXECUTION": "autograde", "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads),
        "GLOO_SOCKET_IFNAME": "lo", "MASTER_ADDR": "127.0.0.1",
    }
    setenv = [arg for k, v in env.items() for arg in ("--setenv", k, v)]
    return [
        BWRAP, *_namespaces(), "--clearenv", *setenv,
        "--ro-bind", "/usr", "/usr", *root_links, *etc,
        "--size", str(tmp_bytes), "--tmpfs", "/tmp",  # before the course's binds: a course under /tmp stays seen
        *_ro_binds([Path(sys.base_prefix), Path(sys.prefix), package, runner]),
        "--proc", "/proc", "--dev", "/dev",
        "--bind", str(scratch), SANDBOX_DIR, "--chdir", SANDBOX_DIR,
        "--info-fd", str(info_fd),
        str(python), "-I", "-X", "utf8", str(runner.resolve()), *map(str, fds), *runner_args,
    ]


def _limits(memory: int | None, nproc: int | None):
    def apply():  # in the child, before exec: inherited by everything in the sandbox
        if memory:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_FSIZE, (512 * 2**20, 512 * 2**20))  # no file over 512 MiB
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if nproc:
            resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    return apply


def run(scratch: Path, runner: Path, runner_args: list[str], key: bytes, events: Path, *, package: Path,
        timeout: float, memory: int | None, threads: int = 1, sandboxed: bool = True, nproc: int | None = None,
        log: Path | None = None) -> Outcome:
    """Run `runner KEY_FD EVENTS_FD ARGS` on `scratch` (confined unless `sandboxed` is False): the key on an
    inherited pipe, the events file (outside the sandbox: `events`) as an inherited append-only descriptor.
    Returns when the run and every process it started have ended; kills all of them at `timeout` seconds."""
    key_read, key_write = os.pipe()
    os.write(key_write, key)
    os.close(key_write)
    events_fd = os.open(events, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_EXCL, 0o600)
    info_read, info_write = os.pipe()
    start = time.perf_counter()
    out = open(log, "wb") if log else subprocess.DEVNULL
    try:
        if sandboxed:
            argv = command(scratch, runner, runner_args, (key_read, events_fd), package=package,
                           tmp_bytes=1 << 30, threads=threads, info_fd=info_write)
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                    pass_fds=(key_read, events_fd, info_write), start_new_session=True,
                                    preexec_fn=_limits(memory, nproc))
        else:
            env = dict(os.environ, NBGRADER_EXECUTION="autograde", OMP_NUM_THREADS=str(threads),
                       MPLCONFIGDIR=str(scratch / ".matplotlib"))
            proc = subprocess.Popen([sys.executable, "-X", "utf8", str(runner), str(key_read), str(events_fd), *runner_args],
                                    cwd=scratch, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                    pass_fds=(key_read, events_fd), preexec_fn=_limits(memory, None), start_new_session=True, env=env)
    finally:
        os.close(key_read)
        os.close(events_fd)
        os.close(info_write)
        if log:
            out.close()
    if sandboxed:
        init_pid = _read_init_pid(info_read)
    else:
        os.close(info_read)
        init_pid = None
    timed_out = False
    try:
        proc.wait(timeout=max(1.0, timeout - (time.perf_counter() - start)))
    except subprocess.TimeoutExpired:
        timed_out = True
    _kill_everything(proc, init_pid)
    return Outcome(proc.returncode, time.perf_counter() - start, timed_out)


def _read_init_pid(fd: int) -> int | None:
    """bwrap's --info-fd JSON: {"child-pid": N} is the sandbox's pid 1 as seen from here."""
    data = b""
    try:
        while True:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            data += chunk
            if b"}" in data:
                break
    finally:
        os.close(fd)
    try:
        return int(json.loads(data.decode())["child-pid"])
    except (ValueError, KeyError, TypeError):
        return None


def _kill_everything(proc: subprocess.Popen, init_pid: int | None) -> None:
    """SIGKILL the sandbox's pid 1 (the kernel then kills its whole PID namespace), then bwrap and anything
    left in its process group, and wait until pid 1 is gone: no process of the run survives this call."""
    for pid in (init_pid,):
        if pid:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()
    deadline = time.monotonic() + 30
    while init_pid and time.monotonic() < deadline:
        try:
            with open(f"/proc/{init_pid}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[-1].split()[0]
            if state == b"Z":
                break  # a zombie: its namespace is already empty
        except (FileNotFoundError, ProcessLookupError, IndexError):
            break
        time.sleep(0.01)
