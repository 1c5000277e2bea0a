"""Log-in against the roster (lecture2_hub.roster): each person with their own password, checked against the hash
in the roster. Read once when the hub starts: a changed roster takes effect at the next `make hub`. A university's
own log-in replaces this class (docs/hub.md: OAuthenticator, LTI, PAM).

- **Throttled.** Failed log-ins are counted per name and per address (in the hub's memory, over `window`
  seconds): past `free_per_name` failures for a name, or `free_per_address` from one address, each further try
  waits `lockout` seconds, doubled at each failure (at most `max_lockout`), answered 429 with how long to wait.
  The password is not even checked while a name waits, so guessing costs the guesser time and the hub no CPU.
  This holds for the log-in form and for the API's token requests with a password alike (both reach
  `authenticate`).
- **A new session at every log-in.** The session id cookie is set anew when a log-in succeeds, so one that someone
  else placed in the browser beforehand is never the session's.
- **Log-in on the hub's own name only.** With one name per user's server, the hub's pages also answer on those
  names; a log-in form there (a student's name, where her server's pages live) sends the browser to the hub's own.
- Instructors are not the hub's admins: their role (jupyterhub_config.py) lists the class and starts and stops
  servers, and opens nobody's server but their own.
"""
from __future__ import annotations

import asyncio
import math
import time
import uuid
from urllib.parse import urlparse

from jupyterhub.auth import Authenticator
from jupyterhub.handlers.login import LoginHandler
from tornado import web
from traitlets import Float, Int, Unicode

from . import roster


class Throttle:
    """Failures per key (a name, an address) within `window` seconds; how long a key must wait before its next try."""

    def __init__(self, free: int, lockout: float, max_lockout: float, window: float):
        self.free, self.lockout, self.max_lockout, self.window = free, lockout, max_lockout, window
        self._failures: dict[str, list[float]] = {}

    def _recent(self, key: str, now: float) -> list[float]:
        times = [t for t in self._failures.get(key, []) if now - t < self.window]
        if times:
            self._failures[key] = times
        else:
            self._failures.pop(key, None)
        return times

    def wait(self, key: str, now: float | None = None) -> float:
        """Seconds before `key` may try again (0: now)."""
        now = time.monotonic() if now is None else now
        times = self._recent(key, now)
        if len(times) < self.free:
            return 0.0
        delay = min(self.max_lockout, self.lockout * 2 ** (len(times) - self.free))
        return max(0.0, times[-1] + delay - now)

    def failed(self, key: str, now: float | None = None) -> None:
        self._failures.setdefault(key, []).append(time.monotonic() if now is None else now)

    def forget(self, key: str) -> None:
        self._failures.pop(key, None)


class CourseLoginHandler(LoginHandler):
    def _on_hub_host(self) -> bool:
        public = self.settings.get("subdomain_host", "")
        if not public:
            return True
        return self.request.host.split(":")[0].lower() == (urlparse(public).hostname or "").lower()

    async def get(self):
        if not self._on_hub_host():
            self.redirect(self.settings["subdomain_host"] + self.request.uri)
            return
        await super().get()

    async def post(self):
        if not self._on_hub_host():
            raise web.HTTPError(403, "log in on the hub's own address")
        await super().post()

    def set_login_cookie(self, user):
        if self.request.method == "POST":  # a log-in that succeeded: a new session, whatever cookie came with it
            self._session_id = uuid.uuid4().hex
            self.set_session_cookie()
        super().set_login_cookie(user)


class RosterAuthenticator(Authenticator):
    roster_file = Unicode(config=True, help="the roster CSV (name,role,password hash)")
    free_per_name = Int(5, config=True, help="failed log-ins of one name within `window` before each try waits")
    free_per_address = Int(20, config=True, help="failed log-ins from one address within `window` before each waits")
    lockout = Float(30.0, config=True, help="seconds of the first wait, doubled at each further failure")
    max_lockout = Float(900.0, config=True, help="the longest wait, in seconds")
    window = Float(3600.0, config=True, help="seconds over which failures are counted")

    def __init__(self, **kw):
        super().__init__(**kw)
        self.people = {p.name: p for p in roster.load(roster.Path(self.roster_file))}
        self.allowed_users = set(self.people)
        self.by_name = Throttle(self.free_per_name, self.lockout, self.max_lockout, self.window)
        self.by_address = Throttle(self.free_per_address, self.lockout, self.max_lockout, self.window)

    def get_handlers(self, app):
        return [("/login", CourseLoginHandler)]

    async def authenticate(self, handler, data):
        name = self.normalize_username((data or {}).get("username", ""))[:64]
        address = f"address:{handler.request.remote_ip}"
        wait = max(self.by_name.wait(f"name:{name}"), self.by_address.wait(address))
        if wait:
            raise web.HTTPError(429, f"Too many failed log-ins: try again in {math.ceil(wait)} s")
        person = self.people.get(name)
        ok = bool(person and person.password_hash) and await asyncio.get_running_loop().run_in_executor(
            None, roster.check_password, data.get("password", ""), person.password_hash)
        if not ok:
            self.by_name.failed(f"name:{name}")
            self.by_address.failed(address)
            self.log.warning("failed log-in for %r from %s", name, handler.request.remote_ip)
            return None
        self.by_name.forget(f"name:{name}")
        return {"name": name, "admin": False}
