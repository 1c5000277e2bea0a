"""Log-in against the roster (lecture2_hub.roster): each person with their own password, checked against the hash
in the roster; instructors are the hub's admins. Read once when the hub starts: a changed roster takes effect at
the next `make hub`. A university's own log-in replaces this class (docs/hub.md: OAuthenticator, LTI, PAM)."""
from __future__ import annotations

import asyncio

from jupyterhub.auth import Authenticator
from traitlets import Unicode

from . import roster


class RosterAuthenticator(Authenticator):
    roster_file = Unicode(config=True, help="the roster CSV (name,role,password hash)")

    def __init__(self, **kw):
        super().__init__(**kw)
        self.people = {p.name: p for p in roster.load(roster.Path(self.roster_file))}
        self.allowed_users = set(self.people)
        self.admin_users = {n for n, p in self.people.items() if p.role == "instructor"}

    async def authenticate(self, handler, data):
        name = self.normalize_username(data.get("username", ""))
        person = self.people.get(name)
        if person is None or not person.password_hash:
            return None
        ok = await asyncio.get_running_loop().run_in_executor(
            None, roster.check_password, data.get("password", ""), person.password_hash)
        return {"name": name, "admin": person.role == "instructor"} if ok else None
