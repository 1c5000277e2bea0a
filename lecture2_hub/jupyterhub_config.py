"""JupyterHub's configuration for the course's hub, read by the `jupyterhub` that `make hub` starts (as
`jupyterhub -f lecture2_hub/jupyterhub_config.py`, with LECTURE2_HUB_SETTINGS naming the settings it wrote).

Everything is on 127.0.0.1: the public port (configurable-http-proxy), the hub's API and the proxy's API (free
ports picked at start). Log-in against the roster; each student's server as their own Unix user; the instructors'
as the course folder's owner (lecture2_hub.spawner). Put a TLS-terminating web server (or the hub's own
ssl_cert/ssl_key) in front before students reach it from another machine: docs/hub.md.
"""
from pathlib import Path

from lecture2_hub import settings

c = get_config()  # noqa: F821  (provided by JupyterHub when it loads this file)
s = settings.current()
state = Path(s.state)

c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = s.port
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = s.hub_port
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

c.JupyterHub.spawner_class = "lecture2_hub.spawner.CourseSpawner"
c.Spawner.default_url = "/lab"
c.Spawner.start_timeout = 120  # a first lab on a busy 2-core machine
c.Spawner.http_timeout = 120
c.Spawner.environment = {settings.TAG_ENV: s.state}
