"""File systems of a bounded size: each student's home, and the exchange, so that no one student fills a disk that
others need.

A home is an ext4 image of `StudentLimits.disk` bytes (sparse: it takes on the disk what it holds), kept in the
hub's folder (`.hub/disks/<name>.img`) and mounted on the student's home (nosuid, nodev) by root when her server
starts; she writes until it is full and no further, and nothing of hers reaches the machine's own disk. The
exchange is one such image (`.hub/disks/exchange.img`) when `make hub` makes the exchange: a class cannot fill the
machine's disk through it. Every mount made is written down in `.hub/mounts.json`, so that `make hub-stop` undoes
exactly those (homes; the exchange stays mounted for `make collect` and `make feedback` unless asked).

A machine whose file systems have user quotas (ext4 or XFS with usrquota, `setquota`) can bound homes that way
instead: `HUB_LIMITS="disk=0"` leaves homes on the machine's disk (docs/hub.md).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from lecture2_grader.files import OWNER_ONLY, write_atomic


class DiskError(RuntimeError):
    """A file system could not be made or mounted; the message says which and why."""


def _run(*argv: str) -> None:
    proc = subprocess.run(list(argv), capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise DiskError(f"{' '.join(argv)} failed: {(proc.stderr or proc.stdout).strip()[:400]}")


def problem() -> str | None:
    """Why file systems of their own cannot be made here (mkfs.ext4, mount, loop devices), or None."""
    if os.geteuid() != 0:
        return "only root mounts file systems"
    for tool in ("mkfs.ext4", "mount", "umount"):
        if not shutil.which(tool):
            return f"{tool} is missing (Debian: apt-get install e2fsprogs mount)"
    if not Path("/dev/loop-control").exists():
        return "this machine has no loop devices (/dev/loop-control)"
    return None


def is_mount(path: Path) -> bool:
    try:
        return os.path.ismount(path)
    except OSError:
        return False


def _record(state: Path, target: Path, image: Path) -> None:
    path = state / "mounts.json"
    mounts = read_mounts(state)
    mounts[str(target)] = str(image)
    write_atomic(path, json.dumps(mounts, indent=1) + "\n", OWNER_ONLY)


def read_mounts(state: Path) -> dict[str, str]:
    """mount point -> image, every mount this hub made."""
    try:
        return json.loads((state / "mounts.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def make_image(image: Path, size: int, uid: int = 0, gid: int = 0) -> None:
    """An empty ext4 file system of `size` bytes in the (sparse) file `image`, its root folder uid:gid's."""
    image.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(image.parent, 0o700)
    fd = os.open(image, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.ftruncate(fd, size)
    finally:
        os.close(fd)
    _run("mkfs.ext4", "-q", "-F", "-m", "0", "-E", f"root_owner={uid}:{gid}", "-L", "lecture2", str(image))


def mount(state: Path, image: Path, target: Path) -> None:
    """Mount `image` on `target` (loop, nosuid, nodev), and write it down for `make hub-stop`."""
    _run("mount", "-o", "loop,nosuid,nodev", str(image), str(target))
    _record(state, target, image)
    lost = target / "lost+found"
    if lost.is_dir() and not lost.is_symlink() and not any(lost.iterdir()):
        lost.rmdir()  # mkfs's, empty: not a folder to show a student


def home(state: Path, name: str, target: Path, size: int, uid: int, gid: int) -> str | None:
    """The student's home at `target` on a file system of `size` bytes of its own (made the first time, then
    mounted again at each start); what it did, or None when it was mounted already. A home that exists with files
    (before homes had a size) is copied into the new file system first; the files under it stay as they were."""
    if is_mount(target):
        return None
    image = state / "disks" / f"{name}.img"
    made = not image.exists()
    if made:
        make_image(image, size, uid, gid)
    target.mkdir(parents=True, exist_ok=True)
    copied = ""
    if made and any(target.iterdir()):
        with tempfile.TemporaryDirectory(dir=state) as scratch:
            _run("mount", "-o", "loop,nosuid,nodev", str(image), scratch)
            try:
                _run("cp", "-a", "--", f"{target}/.", scratch)
            finally:
                _run("umount", scratch)
        copied = " (her earlier files copied in)"
    mount(state, image, target)
    if made and not copied and Path("/etc/skel").is_dir():
        _run("cp", "-a", "--", "/etc/skel/.", str(target))
    os.chown(target, uid, gid)
    os.chmod(target, 0o700)
    if made:
        for folder, dirs, files in os.walk(target):
            for entry in [folder, *(os.path.join(folder, d) for d in dirs), *(os.path.join(folder, f) for f in files)]:
                os.lchown(entry, uid, gid)
    return f"{name}: home on a file system of its own, {size / 2**30:g} GiB{copied}"


def exchange(state: Path, root: Path, size: int) -> str | None:
    """The exchange's root on a file system of `size` bytes, when `make hub` makes it (it does not exist, or is an
    empty folder); mounted again at each start. What it did, or None. An exchange that exists with content stays
    where it is (the line says it shares the machine's disk)."""
    if is_mount(root):
        return None
    image = state / "disks" / "exchange.img"
    if not image.exists():
        if root.exists() and (root.is_symlink() or not root.is_dir() or any(root.iterdir())):
            return (f"note: the exchange {root} existed before the hub made it, so it shares the disk it is on; a "
                    f"class can fill that disk through it (move it away and start the hub again to give it "
                    f"{size / 2**30:g} GiB of its own)")
        make_image(image, size)
    root.mkdir(parents=True, exist_ok=True)
    mount(state, image, root)
    os.chmod(root, 0o755)
    return f"the exchange: a file system of its own, {size / 2**30:g} GiB"


def unmount(state: Path, keep_exchange: bool = True) -> list[str]:
    """Undo this hub's mounts (homes; the exchange too unless `keep_exchange`); lines for those that could not be."""
    mounts = read_mounts(state)
    problems = []
    for target, image in sorted(mounts.items()):
        if keep_exchange and Path(image).name == "exchange.img":
            continue
        if is_mount(Path(target)):
            proc = subprocess.run(["umount", target], capture_output=True, text=True)
            if proc.returncode != 0:
                lazy = subprocess.run(["umount", "-l", target], capture_output=True, text=True)
                if lazy.returncode != 0:
                    problems.append(f"{target}: {proc.stderr.strip()[:200]}")
                    continue
        del mounts[target]
    write_atomic(state / "mounts.json", json.dumps(mounts, indent=1) + "\n", OWNER_ONLY)
    return problems
