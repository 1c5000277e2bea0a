"""Each person's Jupyter server, started by the hub (which runs as root) as a Unix user:

- a student: their own Unix user (made the first time, lecture2_hub.accounts), in their private home, with the
  course's .venv as the kernel, nbgrader's Assignments tab and the course's Validate button (the grader's own
  visible checks, lecture2_hub.validate_button), and none of nbgrader's instructor tools;
- an instructor: the course folder's owner, in the course folder, with nbgrader's formgrader, whose Autograde and
  Generate Feedback buttons run the course's sandboxed grader (nbgrader_config.py, lecture2_grader.nbgrader_hooks).

Every process started carries TAG_ENV, by which `make hub-stop` finds whatever outlived the hub.
"""
from __future__ import annotations

import asyncio
from pathlib import Path

from jupyterhub.spawner import LocalProcessSpawner, set_user_setuid

from . import accounts, roster, settings


def config_dir(state: Path, role: str) -> Path:
    """The Jupyter config folder of a role's servers (written by `make hub`, lecture2_hub.control)."""
    return state / "config" / role


class CourseSpawner(LocalProcessSpawner):
    def _settings(self) -> settings.Settings:
        if not hasattr(self, "_cached_settings"):
            self._cached_settings = settings.current()
        return self._cached_settings

    @property
    def role(self) -> str:
        people = {p.name: p for p in roster.load(Path(self._settings().roster))}
        return people[self.user.name].role if self.user.name in people else "student"

    @property
    def unix_name(self) -> str:
        if self.role == "instructor":
            return accounts.owner(Path(self._settings().course)).pw_name
        return self.user.name

    async def start(self):
        s = self._settings()
        if self.role == "student":
            entry = await asyncio.get_running_loop().run_in_executor(
                None, accounts.ensure_student, self.user.name, Path(s.homes))
            self.notebook_dir = entry.pw_dir
            self.popen_kwargs = {}
        else:
            self.notebook_dir = s.course
            self.popen_kwargs = {"cwd": s.course}  # nbgrader_config.py's course root is the server's folder
        self.cmd = [str(s.venv_bin / "jupyterhub-singleuser")]
        return await super().start()

    def make_preexec_fn(self, name):
        return set_user_setuid(self.unix_name, chdir=self.role == "student")

    def get_args(self):
        args = super().get_args()
        if accounts.account(self.unix_name).pw_uid == 0:
            args.append("--allow-root")
        return args

    def user_env(self, env):
        entry = accounts.account(self.unix_name)
        env.update(USER=self.unix_name, LOGNAME=self.unix_name, SHELL=entry.pw_shell or "/bin/bash",
                   HOME=entry.pw_dir)
        return env

    def get_env(self):
        env = super().get_env()
        s = self._settings()
        state = Path(s.state)
        env["PATH"] = f"{s.venv_bin}:/usr/local/bin:/usr/bin:/bin"
        env["JUPYTER_CONFIG_PATH"] = str(config_dir(state, self.role))
        env[settings.TAG_ENV] = s.state
        env.pop("NBGRADER_EXECUTION", None)
        if self.role == "instructor":  # the instructor's lab state under the hub's folder, not in their home
            private = state / "instructor" / self.user.name
            env.update(JUPYTER_RUNTIME_DIR=str(private / "runtime"),
                       JUPYTERLAB_WORKSPACES_DIR=str(private / "workspaces"),
                       JUPYTERLAB_SETTINGS_DIR=str(private / "settings"))
        return env
