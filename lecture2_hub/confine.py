"""The room a student's server runs in: bubblewrap, started as the student (no privilege), around
`jupyterhub-singleuser`.

Inside, the student's server, terminals and kernels
- see only their own processes (a PID namespace of their own, its own /proc): no one else's command line, token or
  environment, and no process to signal but their own;
- have a /tmp and a /dev/shm of their own, memory file systems of `StudentLimits.tmp` bytes each (their pages count
  in her memory limit), gone when the server stops;
- see the machine's files read-only, as their Unix user may read them, but for two folders they may write: their
  home (a file system of its own, lecture2_hub.disks) and the exchange's inbound (where nbgrader's Submit writes);
  nothing else of the machine's disks, /var/tmp and /run/lock included, can be filled;
- keep the machine's network (the proxy reaches the server on 127.0.0.1), GPU devices where there are some.

The server is the process the hub started (bubblewrap's), in her cgroup (lecture2_hub.limits); stopping it stops
everything inside, as bubblewrap dies with it.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from lecture2_grader.sandbox import gpu_devices

from .limits import StudentLimits

BWRAP = "bwrap"
NOBODY = 65534


def problem() -> str | None:
    """Why a student's server cannot be confined here, or None: bubblewrap must run, as an ordinary user, in
    namespaces of its own (unprivileged user namespaces)."""
    if shutil.which(BWRAP) is None:
        return "bubblewrap (bwrap) is not installed (Debian, Ubuntu: apt-get install bubblewrap)"
    try:
        probe = subprocess.run([shutil.which(BWRAP), "--unshare-user", "--unshare-pid", "--ro-bind", "/", "/",
                                "--proc", "/proc", "true"], capture_output=True, text=True, timeout=30,
                               user=NOBODY, group=NOBODY, extra_groups=[], cwd="/")
    except (OSError, subprocess.SubprocessError) as err:
        return f"bubblewrap did not run as an ordinary user ({err})"
    if probe.returncode != 0:
        return (f"bubblewrap cannot make namespaces as an ordinary user here ({probe.stderr.strip()[:200]}): "
                "unprivileged user namespaces are off (sysctl kernel.unprivileged_userns_clone=1, or "
                "user.max_user_namespaces above 0)")
    return None


def command(argv: list[str], *, home: Path, writable: list[Path], readable: list[Path],
            limits: StudentLimits) -> list[str]:
    """The command line that runs `argv` (the student's server) confined. `writable`: folders besides her home she
    may write (the exchange's inbound); `readable`: folders her server needs (the course, its Python, the exchange,
    the hub's configs), bound again after her own /tmp in case they lie under the machine's /tmp."""
    seen: set[str] = set()
    binds = []
    for flag, folders in (("--ro-bind", readable), ("--bind", [home, *writable])):
        for folder in folders:
            for path in dict.fromkeys([str(folder), str(Path(folder).resolve())]):
                if Path(path).exists() and (flag, path) not in seen:
                    seen.add((flag, path))
                    binds += [flag, path, path]
    return [shutil.which(BWRAP) or BWRAP,
            "--unshare-user", "--unshare-pid", "--unshare-ipc", "--die-with-parent",
            "--ro-bind", "/", "/", "--dev", "/dev", *gpu_devices(), "--proc", "/proc",
            "--size", str(limits.tmp), "--tmpfs", "/tmp", "--size", str(limits.tmp), "--tmpfs", "/dev/shm",
            *binds, "--chdir", str(home), "--", *argv]
