"""A course's hub for the tests, and what its people do on it without a browser: log in for a token, start their
server, run commands in their lab's terminal, call their server's API.

Everything goes to 127.0.0.1 with the Host header a browser would send (`<name>.localhost:PORT` for a person's server):
Chromium resolves *.localhost by itself, Python's resolver does not.
"""
from __future__ import annotations

import asyncio
import json
import os
import pwd
import re
import secrets
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from conftest import ASSIGNMENT, BIN, RELEASE, ROOT, SOLUTIONS, nbgrader_env

NAME = "01_tensors_dtypes.ipynb"
FAST_HASH = 1000  # PBKDF2 iterations of the tests' passwords: log-ins cost nothing


def unavailable_reason() -> str | None:
    """Why a hub cannot start here (the caller skips, or fails under LECTURE2_BROWSER_REQUIRED), or None."""
    if os.geteuid() != 0:
        return "the hub test runs as root (the hub makes each student's Unix user)"
    from lecture2_hub import accounts, confine, control, disks, limits

    if not (ROOT / control.PROXY_IN_VENV).exists():
        return f"configurable-http-proxy is not installed at {ROOT / control.PROXY_IN_VENV} (make hub-proxy)"
    for why in (accounts.interpreter_problem(ROOT / ".venv"), accounts.package_problem(ROOT / ".venv"),
                confine.problem(), limits.cgroup_problem(), disks.problem()):
        if why:
            return why
    if not shutil.which("useradd"):
        return "useradd is missing (Debian's passwd package)"
    return None


def make_account(name: str) -> pwd.struct_passwd:
    """An ordinary Unix user (not one the hub makes): the course's owner."""
    subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", name], check=True, capture_output=True)
    return pwd.getpwnam(name)


def remove_account(name: str) -> None:
    subprocess.run(["userdel", "--remove", name], capture_output=True)


def run_as(entry: pwd.struct_passwd, *argv: str, cwd: Path | str = "/", env: dict | None = None,
           timeout: float = 300) -> subprocess.CompletedProcess:
    """`argv` as the Unix user `entry` (no supplementary groups)."""
    return subprocess.run(list(argv), user=entry.pw_uid, group=entry.pw_gid, extra_groups=[], capture_output=True,
                          text=True, cwd=cwd, env=env or {"PATH": "/usr/bin:/bin", "HOME": entry.pw_dir},
                          timeout=timeout, stdin=subprocess.DEVNULL)


def owner_env(entry: pwd.struct_passwd) -> dict[str, str]:
    env = nbgrader_env()
    env.update(HOME=entry.pw_dir, USER=entry.pw_name, LOGNAME=entry.pw_name)
    return env


def request(url: str, method: str = "GET", *, token: str = "", body: dict | None = None,
            timeout: float = 30) -> tuple[int, str]:
    """(status, body) of an HTTP request to the hub (127.0.0.1 with the name in `url` as the Host)."""
    u = urlparse(url)
    direct = url.replace(u.netloc, f"127.0.0.1:{u.port}", 1)
    headers = {"Host": u.netloc, "Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"token {token}"
    data = json.dumps(body).encode() if body is not None else (b"" if method in ("POST", "PUT") else None)
    req = urllib.request.Request(direct, method=method, data=data, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as reply:
            return reply.status, reply.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode("utf-8", "replace")


@dataclass
class Hub:
    """A hub of the course on a scratch course folder owned by an ordinary account; its class on a roster."""

    base: Path
    port: int
    people: dict[str, str]  # name -> role
    passwords: dict[str, str]
    owner: pwd.struct_passwd
    limits: str = ""
    extra: dict = field(default_factory=dict)
    started: str = ""

    @property
    def course(self) -> Path:
        return self.base / "course"

    @property
    def state(self) -> Path:
        return self.course / ".hub"

    @property
    def exchange(self) -> Path:
        return self.base / "exchange"

    @property
    def homes(self) -> Path:
        return self.base / "homes"

    @property
    def url(self) -> str:
        return f"http://localhost:{self.port}"

    def server(self, name: str) -> str:
        return f"http://{name}.localhost:{self.port}/user/{name}"

    def start_args(self) -> list[str]:
        return ["--course", str(self.course), "--roster", str(self.base / "roster.csv"), "--port", str(self.port),
                "--exchange", str(self.exchange), "--homes", str(self.homes), "--state", str(self.state),
                *(["--limits", self.limits] if self.limits else []), "--extra", json.dumps(self.extra)]

    def cli(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
        return subprocess.run([str(BIN / "python"), "-m", "lecture2_hub", *args], cwd=ROOT, env=nbgrader_env(),
                              capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=timeout)

    def token(self, name: str) -> str:
        status, text = request(f"{self.url}/hub/api/users/{name}/tokens", "POST",
                               body={"auth": {"username": name, "password": self.passwords[name]}, "note": "test"})
        assert status == 201, (status, text)
        return json.loads(text)["token"]

    def start_server(self, name: str, token: str, timeout: float = 120) -> None:
        status, text = request(f"{self.url}/hub/api/users/{name}/server", "POST", token=token)
        assert status in (201, 202, 400), (status, text)  # 400: already running
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status, text = request(f"{self.url}/hub/api/users/{name}", token=token)
            server = json.loads(text).get("servers", {}).get("", {})
            if server.get("ready"):
                return
            time.sleep(0.3)
        raise AssertionError(f"{name}'s server did not start:\n" + self.log_tail())

    def stop_server(self, name: str, token: str, timeout: float = 60) -> None:
        request(f"{self.url}/hub/api/users/{name}/server", "DELETE", token=token)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status, text = request(f"{self.url}/hub/api/users/{name}", token=token)
            if not json.loads(text).get("servers"):
                return
            time.sleep(0.3)
        raise AssertionError(f"{name}'s server did not stop")

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join((self.state / "jupyterhub.log").read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def answers(self, name: str, token: str, timeout: float = 10) -> bool:
        """Does `name`'s server answer its API within `timeout` seconds?"""
        try:
            status, _ = request(f"{self.server(name)}/api/status", token=token, timeout=timeout)
        except OSError:
            return False
        return status == 200


def start_hub(people: dict[str, str], *, limits: str = "", extra: dict | None = None) -> Hub:
    """A hub for `people` (name -> role) on a scratch course (notebook 01) owned by a new ordinary account."""
    from lecture2_hub import roster
    from lecture2_hub.preflight import free_port

    tag = secrets.token_hex(3)
    base = Path(tempfile.mkdtemp(prefix="lecture2-hub-"))  # not under pytest's tmp (mode 0700): students reach it
    os.chmod(base, 0o755)
    owner = make_account(f"l2own-{tag}")
    course = base / "course"
    for kind, folder in (("solutions", SOLUTIONS), ("notebooks", RELEASE)):
        (course / kind / ASSIGNMENT).mkdir(parents=True)
        shutil.copy(folder / NAME, course / kind / ASSIGNMENT)
    shutil.copy(ROOT / "nbgrader_config.py", course)
    (course / ".venv").symlink_to(ROOT / ".venv")
    passwords = {n: secrets.token_urlsafe(12) for n in people}
    (base / "roster.csv").write_text("name,role,password\n" + "".join(
        f"{n},{r},{roster.hash_password(passwords[n], FAST_HASH)}\n" for n, r in people.items()), encoding="utf-8")
    subprocess.run(["chown", "-R", "--no-dereference", f"{owner.pw_name}:", str(course)], check=True)
    hub = Hub(base, free_port(), dict(people), passwords, owner, limits, extra or {})
    proc = hub.cli("start", *hub.start_args())
    if proc.returncode != 0:
        stop_hub(hub)
        raise AssertionError(f"the hub did not start:\n{proc.stdout}\n{proc.stderr}")
    hub.started = proc.stdout
    return hub


def stop_hub(hub: Hub) -> subprocess.CompletedProcess:
    """Stop the hub, unmount what it mounted, remove the Unix users it and the test made, and the scratch folder."""
    stopped = hub.cli("stop", "--state", str(hub.state), "--unmount-exchange")
    for name, role in hub.people.items():
        if role == "student":
            remove_account(name)
    remove_account(hub.owner.pw_name)
    shutil.rmtree(hub.base, ignore_errors=True)
    return stopped


class Terminal:
    """A terminal in a person's lab (the server's terminals API and its websocket), commands typed as she would."""

    def __init__(self, hub: Hub, name: str, token: str):
        self.hub, self.name, self.token = hub, name, token
        status, text = request(f"{hub.server(name)}/api/terminals", "POST", token=token)
        assert status == 200, (status, text)
        self.terminal = json.loads(text)["name"]

    def run(self, command: str, timeout: float = 120) -> str:
        """What `command` printed (stdout and stderr, as the terminal shows them)."""
        return asyncio.run(self._run(command, timeout))

    async def _run(self, command: str, timeout: float) -> str:
        from tornado.httpclient import HTTPRequest
        from tornado.websocket import websocket_connect

        u = urlparse(self.hub.server(self.name))
        url = f"ws://127.0.0.1:{u.port}{u.path}/terminals/websocket/{self.terminal}"
        ws = await websocket_connect(HTTPRequest(url, headers={"Host": u.netloc,
                                                               "Authorization": f"token {self.token}"}))
        mark = secrets.token_hex(4)
        # the end mark is computed by the shell, so the echo of the typed line never contains it
        ws.write_message(json.dumps(["stdin", f"{command}; echo; echo END$((40+2)){mark}\r"]))
        out = ""

        async def read():
            nonlocal out
            while f"END42{mark}" not in out:
                message = await ws.read_message()
                if message is None:
                    break
                kind = json.loads(message)
                if kind[0] == "stdout":
                    out += kind[1]

        try:
            await asyncio.wait_for(read(), timeout)
        finally:
            ws.close()
        typed = out.find(f"END$((40+2)){mark}")
        start = out.find("\n", typed) + 1 if typed >= 0 else 0
        text = out[start:out.rfind(f"END42{mark}")].replace("\r\n", "\n")
        return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07", "", text)  # the terminal's colours and titles
