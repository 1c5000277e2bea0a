"""JupyterHub's configuration for the course's hub, read by the `jupyterhub` that `make hub` starts (as
`jupyterhub -f lecture2_hub/jupyterhub_config.py`, with LECTURE2_HUB_SETTINGS naming the settings it wrote).

- **One origin per person.** The hub is at its public address (`http://localhost:8000` by default) and each
  person's server on a name of its own below it (`http://alice.localhost:8000/user/alice/`): a page a student's
  server serves cannot read the hub's pages or another person's, and with `__Host-` cookies (set on one name only,
  never for the names below it) it cannot place a cookie that the hub or another server would take. JupyterHub's
  security overview: a single origin is not for untrusted users. On a real class, a wildcard name and TLS in front
  (docs/hub.md: Caddy or nginx).
- Students' own configuration is never loaded into their servers (disable_user_config).
- Instructors are not admins: their role lists the class and starts and stops its servers, and opens no one's
  server but their own (no `access:servers` on students, no tokens for others).
- Idle servers are stopped by jupyterhub-idle-culler (StudentLimits.idle), running as nobody.

Everything listens on 127.0.0.1: the public port (configurable-http-proxy), the hub's API and the proxy's API (free
ports picked at start). Log-in against the roster; servers by lecture2_hub.spawner.
"""
import sys
from pathlib import Path

from lecture2_hub import roster, settings

c = get_config()  # noqa: F821  (provided by JupyterHub when it loads this file)
s = settings.current()
state = Path(s.state)
bounds = s.student_limits

c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = s.port
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = s.hub_port
c.JupyterHub.subdomain_host = s.url
c.JupyterHub.cookie_host_prefix_enabled = True
# Every cookie Secure, the servers' OAuth state cookie too (JupyterHub marks that one Secure only over https, and a
# browser drops a __Host- cookie without it): over plain http a browser keeps them on localhost and *.localhost only,
# so a class elsewhere needs TLS in front (docs/hub.md), as it should.
c.JupyterHub.tornado_settings = {"cookie_options": {"secure": True}}
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{s.proxy_api_port}"
c.ConfigurableHTTPProxy.command = [s.proxy]
c.ConfigurableHTTPProxy.pid_file = str(state / "proxy.pid")
c.JupyterHub.db_url = f"sqlite:///{state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(state / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(state / "jupyterhub.pid")
c.JupyterHub.cleanup_servers = True  # stopping the hub stops every server it started
c.JupyterHub.cleanup_proxy = True

c.JupyterHub.authenticator_class = "lecture2_hub.authenticator.RosterAuthenticator"
c.RosterAuthenticator.roster_file = s.roster
for trait, value in s.extra.get("login", {}).items():  # the tests' shorter waits
    setattr(c.RosterAuthenticator, trait, value)

instructors = [p.name for p in roster.load(Path(s.roster)) if p.role == "instructor"]
c.JupyterHub.load_roles = [
    {"name": "course-instructor", "description": "the course's instructors: see the class, start and stop servers",
     "scopes": ["admin-ui", "list:users", "read:users", "admin:servers"], "users": instructors},
]
if bounds.idle:
    c.JupyterHub.services = [{
        "name": "idle-culler", "user": "nobody",
        "command": [sys.executable, "-m", "jupyterhub_idle_culler", f"--timeout={bounds.idle}",
                    f"--cull-every={max(5, min(300, bounds.idle // 4))}"],
    }]
    c.JupyterHub.load_roles.append({"name": "idle-culler", "services": ["idle-culler"],
                                    "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"]})

c.JupyterHub.spawner_class = "lecture2_hub.spawner.CourseSpawner"
c.Spawner.disable_user_config = True
c.Spawner.default_url = "/lab"
c.Spawner.start_timeout = 120  # a first lab on a busy 2-core machine
c.Spawner.http_timeout = 120
c.Spawner.environment = {settings.TAG_ENV: s.state}
