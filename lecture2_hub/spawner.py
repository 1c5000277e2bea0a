"""Each person's Jupyter server, started by the hub (which runs as root) as a Unix user that is not root:

- a student: her own Unix user (made the first time, lecture2_hub.accounts), in her private home (a file system of
  its own, lecture2_hub.disks), in her cgroup (memory, CPU, processes: lecture2_hub.limits) and inside bubblewrap
  (her own processes only, her own /tmp, nothing of the machine writable but her home and the exchange's inbound:
  lecture2_hub.confine); with the course's .venv as the kernel, nbgrader's Assignments tab and the course's Validate
  button (the grader's own visible checks, lecture2_hub.validate_button), none of nbgrader's instructor tools, at
  most StudentLimits.kernels kernels, and nothing of her own configuration loaded (the hub's disable_user_config:
  no server extension or config file of hers in ~/.jupyter or her home runs in her server);
- an instructor: the course folder's owner (never root: make hub refuses such a course), in the course folder,
  with nbgrader's formgrader, whose Autograde and Generate Feedback buttons run the course's sandboxed grader
  (nbgrader_config.py, lecture2_grader.nbgrader_hooks) and whose Collect button the course's collector.

Every process started carries TAG_ENV, by which `make hub-stop` finds whatever outlived the hub.
"""
from __future__ import annotations

import asyncio
from pathlib import Path

from jupyterhub.spawner import LocalProcessSpawner, set_user_setuid

from lecture2 import editions

from . import accounts, confine, disks, limits, roster, settings


def config_dir(state: Path, role: str, edition: str = editions.SOURCE) -> Path:
    """The Jupyter config folder of a role's servers (written by `make hub`, lecture2_hub.control); a student of
    another edition than the source's has one of their own (config/student-en: the lab in that language)."""
    return state / "config" / (role if edition == editions.SOURCE else f"{role}-{edition}")


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
    def edition(self) -> str:
        """The edition the roster names for this person (lecture2_hub.roster: the source's by default)."""
        people = {p.name: p for p in roster.load(Path(self._settings().roster))}
        return people[self.user.name].edition if self.user.name in people else editions.SOURCE

    @property
    def unix_name(self) -> str:
        if self.role == "instructor":
            return self._settings().owner
        return self.user.name

    def _prepare_student(self) -> None:
        """(In a thread: useradd, mkfs and mount take a moment.) Her account, her home on its own file system, her
        cgroup, and the command that confines her server."""
        s = self._settings()
        bounds = s.student_limits
        entry = accounts.ensure_student(self.user.name, Path(s.homes), create_home=not bounds.disk)
        home = Path(entry.pw_dir)
        if bounds.disk:
            made = disks.home(Path(s.state), self.user.name, home, bounds.disk, entry.pw_uid, entry.pw_gid)
            if made:
                self.log.info(made)
        self._cgroup = limits.student_cgroup(Path(s.state), self.user.name, bounds) if s.bounded else None
        self.notebook_dir = str(home)
        venv = Path(s.course) / ".venv"
        self.cmd = confine.command([str(s.venv_bin / "jupyterhub-singleuser")], home=home, writable=[s.inbound],
                                   readable=[Path(s.course), venv.resolve(), (venv / "bin" / "python").resolve().parents[1],
                                             *accounts.editable_folders(venv),
                                             Path(s.exchange), Path(s.state) / "config"], limits=bounds)

    async def start(self):
        s = self._settings()
        self._cgroup = None
        if self.role == "student":
            await asyncio.get_running_loop().run_in_executor(None, self._prepare_student)
            self.popen_kwargs = {}
        else:
            if accounts.account(self.unix_name) is None or accounts.account(self.unix_name).pw_uid == 0:
                raise RuntimeError(f"the course's owner {self.unix_name!r} is not an ordinary Unix user: an "
                                   "instructor's lab never runs as root")
            self.notebook_dir = s.course
            self.popen_kwargs = {"cwd": s.course}  # nbgrader_config.py's course root is the server's folder
            self.cmd = [str(s.venv_bin / "jupyterhub-singleuser")]
        return await super().start()

    def make_preexec_fn(self, name):
        become = set_user_setuid(self.unix_name, chdir=self.role == "student")
        cgroup = self._cgroup

        def preexec():  # in the child, as root, before exec: into her cgroup, then her own user
            if cgroup is not None:
                cgroup.enter()
            become()

        return preexec

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
        edition = self.edition if self.role == "student" else editions.SOURCE
        env["JUPYTER_CONFIG_PATH"] = str(config_dir(state, self.role, edition))
        env[editions.ENV] = edition  # what lecture2 says in her kernels, where a notebook names no edition
        env[settings.TAG_ENV] = s.state
        env.pop("NBGRADER_EXECUTION", None)
        if self.role == "instructor":  # the instructor's lab state under the hub's folder, not in their home
            private = state / "instructor" / self.user.name
            env.update(JUPYTER_RUNTIME_DIR=str(private / "runtime"),
                       JUPYTERLAB_WORKSPACES_DIR=str(private / "workspaces"),
                       JUPYTERLAB_SETTINGS_DIR=str(private / "settings"))
        return env
