"""The running hub's settings: written by `make hub` (lecture2_hub.control) into the hub's state folder as
settings.json, read by jupyterhub_config.py, the spawner and the authenticator in the hub's process (which finds
the file through the environment variable SETTINGS_ENV)."""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from lecture2_grader.files import OWNER_ONLY, write_atomic

from .limits import StudentLimits

SETTINGS_ENV = "LECTURE2_HUB_SETTINGS"
# Every process the hub starts (the proxy, each server, their kernels) carries this variable with the state
# folder as its value: `make hub-stop` finds them by it and stops each by its process id.
TAG_ENV = "LECTURE2_HUB_STATE"
COURSE_ID = "lecture2"  # the course's name in nbgrader's exchange (c.CourseDirectory.course_id)


@dataclass
class Settings:
    course: str  # the course folder (nbgrader_config.py, notebooks/, .venv)
    state: str  # the hub's own folder: settings, database, cookie secret, logs, pid files
    roster: str
    exchange: str  # nbgrader's exchange root; the course's part is exchange/COURSE_ID
    homes: str  # students' home folders are made here
    port: int  # the public port (the proxy) on 127.0.0.1
    public_url: str = ""  # where people open the hub; each person's server is on a name of its own below it
    owner: str = ""  # the Unix user the course folder belongs to: instructors' servers and the course's commands
    limits: dict = field(default_factory=dict)  # lecture2_hub.limits.StudentLimits, as JSON
    bounded: bool = True  # students held to `limits` by cgroups (False only with --no-limits)
    hub_port: int = 0  # the hub's own API port, free, picked at start
    proxy_api_port: int = 0
    proxy: str = ""  # the configurable-http-proxy command
    pid: int = 0  # the jupyterhub process
    extra: dict = field(default_factory=dict)

    @property
    def url(self) -> str:
        """The hub's address as people open it (per-user servers on <name>.<its host>)."""
        return (self.public_url or f"http://localhost:{self.port}").rstrip("/")

    @property
    def student_limits(self) -> StudentLimits:
        return StudentLimits.from_json(self.limits)

    @property
    def inbound(self) -> Path:
        return Path(self.exchange) / COURSE_ID / "inbound"

    @property
    def venv_bin(self) -> Path:
        return Path(self.course) / ".venv" / "bin"

    def write(self) -> Path:
        """settings.json in the state folder, whole (the hub's process may read it at any moment), owner-only."""
        path = Path(self.state) / "settings.json"
        write_atomic(path, json.dumps(asdict(self), indent=1) + "\n", OWNER_ONLY)
        return path


def read(path: Path) -> Settings:
    data = json.loads(path.read_text(encoding="utf-8"))
    return Settings(**data)


def current() -> Settings:
    """The settings of the hub this process belongs to (the hub's process: jupyterhub_config.py, the spawner)."""
    return read(Path(os.environ[SETTINGS_ENV]))
