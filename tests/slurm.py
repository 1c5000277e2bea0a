"""A one-node Slurm for tests, started by hand (no systemd) and stopped by the PIDs it started.

    with OneNodeSlurm(cpus=2, memory_mb=4096) as slurm:   # munged, slurmctld and slurmd in the foreground
        env = slurm.env                                  # SLURM_CONF for sbatch, squeue, scancel, srun
        subprocess.run(["srun", "hostname"], env=env)

Needs root and Debian's slurm-wlm and munge (.ci/run installs them). Everything lives in one temporary folder:
munge's socket, key, log and seed, Slurm's configuration, state, spool and logs. Every daemon talks on the
loopback address only.
"""
from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from lecture2_hub.preflight import free_port

DAEMONS = ("munged", "slurmctld", "slurmd")


def missing() -> str | None:
    """Why a one-node Slurm cannot run here, or None."""
    if os.geteuid() != 0:
        return "a one-node Slurm runs as root"
    for tool in ("/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd", "sbatch", "squeue", "srun"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (Debian: apt-get install slurm-wlm munge)"
    try:
        pwd.getpwnam("munge")
    except KeyError:
        return "there is no user munge (Debian's munge package makes it)"
    return None


CONF = """\
ClusterName=lecture2test
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={munge_socket}
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=5
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory_mb} State=UNKNOWN
PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


class OneNodeSlurm:
    def __init__(self, cpus: int | None = None, memory_mb: int = 4096):
        self.cpus = cpus or os.cpu_count() or 1
        self.memory_mb = memory_mb
        self.host = socket.gethostname().split(".")[0]
        self.procs: dict[str, subprocess.Popen] = {}
        self.root: Path | None = None

    # ---- start

    def __enter__(self) -> "OneNodeSlurm":
        why = missing()
        if why:
            raise RuntimeError(why)
        self.root = Path(tempfile.mkdtemp(prefix="lecture2-slurm-"))
        try:
            self._start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _start(self) -> None:
        root = self.root
        munge = root / "munge"
        munge.mkdir(mode=0o700)
        key = munge / "munge.key"
        system_key = Path("/etc/munge/munge.key")
        key.write_bytes(system_key.read_bytes() if system_key.is_file() else os.urandom(1024))
        user = pwd.getpwnam("munge")
        for path in (munge, key):
            os.chown(path, user.pw_uid, user.pw_gid)
        key.chmod(0o400)
        root.chmod(0o755)  # munged (user munge) must reach its folder
        self.munge_socket = munge / "munge.socket"
        self._spawn("munged", ["/usr/sbin/munged", "--foreground", "--force", f"--socket={self.munge_socket}",
                               f"--key-file={key}", f"--log-file={munge / 'munged.log'}",
                               f"--pid-file={munge / 'munged.pid'}", f"--seed-file={munge / 'munged.seed'}"],
                    user="munge")
        self._wait_for(lambda: self.munge_socket.exists(), "munged's socket", munge / "munged.log")
        for folder in ("state", "spool"):
            (root / folder).mkdir()
        self.conf = root / "slurm.conf"
        self.conf.write_text(CONF.format(host=self.host, ctld_port=free_port(), d_port=free_port(),
                                         munge_socket=self.munge_socket, root=root, cpus=self.cpus,
                                         memory_mb=self.memory_mb))
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        self._spawn("slurmctld", ["/usr/sbin/slurmctld", "-D", "-i", "-f", str(self.conf)])
        self._wait_for(self._answers, "slurmctld", root / "slurmctld.log")
        self._spawn("slurmd", ["/usr/sbin/slurmd", "-D", "-f", str(self.conf)])
        self._wait_for(self._node_idle, "slurmd (the node idle)", root / "slurmd.log")

    def _spawn(self, name: str, argv: list[str], user: str | None = None) -> None:
        log = open(self.root / f"{name}.out", "wb")
        kwargs = {}
        if user:
            entry = pwd.getpwnam(user)
            kwargs = {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}
        self.procs[name] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            env={**os.environ, "SLURM_CONF": str(getattr(self, "conf", ""))},
                                            start_new_session=True, **kwargs)
        log.close()

    def _answers(self) -> bool:
        return subprocess.run(["scontrol", "ping"], env=self.env, capture_output=True, text=True,
                              timeout=30).stdout.count("UP") > 0

    def _node_idle(self) -> bool:
        out = subprocess.run(["sinfo", "-h", "-o", "%T"], env=self.env, capture_output=True, text=True,
                             timeout=30).stdout
        return "idle" in out

    def _wait_for(self, ready, what: str, log: Path, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            dead = [n for n, p in self.procs.items() if p.poll() is not None]
            if dead:
                break
            try:
                if ready():
                    return
            except (OSError, subprocess.SubprocessError):
                pass
            time.sleep(0.3)
        tail = ""
        for path in (log, *(self.root / f"{n}.out" for n in self.procs)):
            if path.is_file():
                tail += f"\n--- {path.name}\n" + path.read_text(errors="replace")[-2000:]
        raise RuntimeError(f"{what} did not start{tail}")

    # ---- use

    def jobs(self) -> list[str]:
        """The ids of the jobs Slurm holds (pending or running)."""
        out = subprocess.run(["squeue", "-h", "-o", "%i"], env=self.env, capture_output=True, text=True, timeout=30)
        return out.stdout.split()

    # ---- stop

    def __exit__(self, *exc) -> None:
        if self.procs.get("slurmctld") and self.procs["slurmctld"].poll() is None:
            subprocess.run(["scancel", "--full", "--user=root"], env=self.env, capture_output=True, timeout=30)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and self.jobs():
                time.sleep(0.5)
        for name in reversed(DAEMONS):  # slurmd, slurmctld, munged: each by the PID this object started
            proc = self.procs.get(name)
            if proc is None or proc.poll() is not None:
                continue
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
