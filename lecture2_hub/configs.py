"""What `make hub` writes for the servers it starts, and the release it puts into the exchange.

    write(state, exchange, limits)   the Jupyter config folder of each role's servers (.hub/config/<role>/)
    release(course, exchange, owner) notebooks/lec02 and notebooks/lec02-en into the exchange (two assignments,
                                     a student fetching the one of their edition), as the course's owner

A student's server: the Assignments tab (fetch, submit, fetch feedback) and the course's Validate button; no
formgrader, course list or create-assignment; at most `limits.kernels` kernels. An instructor's server: the
formgrader (its Collect through the course's collector), the Assignments tab; not nbgrader's Validate, which
would run a student's notebook as the course's owner outside any sandbox. Both use the exchange classes of
lecture2_hub.exchange. Students cannot change these files, and their own Jupyter configuration is never read.
"""
from __future__ import annotations

import json
import os
import pwd
import subprocess
from pathlib import Path

from lecture2 import editions
from lecture2_grader.files import write_atomic

from . import exchange as exchange_classes
from . import settings
from .limits import StudentLimits
from .spawner import config_dir

ASSIGNMENT = "lec02"
NBGRADER_EXTENSIONS = ("formgrader", "validate_assignment", "assignment_list", "course_list")
# The class's labs ask nobody about Jupyter's news or updates (their defaults; each person can change them).
LAB_DEFAULTS = {"@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False}}
ROLES = {  # role -> (nbgrader's server extensions on, nbgrader's lab plugins off)
    "student": ({"assignment_list"}, ["formgrader", "course-list", "create-assignment"]),
    "instructor": ({"formgrader", "assignment_list", "course_list"}, ["validate-assignment"]),
}


class ReleaseError(RuntimeError):
    pass


def _write(path: Path, text: str) -> None:
    write_atomic(path, text, 0o644)  # read by every student's server
    os.chmod(path, 0o644)


def write(state: Path, exchange: Path, limits: StudentLimits) -> None:
    """The Jupyter config folders of students' and instructors' servers (readable by students, written by root)."""
    nbgrader = (f'c = get_config()  # noqa: F821\nc.Exchange.root = {str(exchange)!r}\n'
                f'c.CourseDirectory.course_id = {settings.COURSE_ID!r}\n' + exchange_classes.factory_config())
    folders = []
    for role, (on, off) in ROLES.items():
        for edition in (editions.EDITIONS if role == "student" else (editions.SOURCE,)):
            folder = config_dir(state, role, edition)
            folders.append(folder)
            extensions = {f"nbgrader.server_extensions.{n}": n in on for n in NBGRADER_EXTENSIONS}
            server: dict = {"ServerApp": {"jpserver_extensions": extensions},
                            "LabApp": {"app_settings_dir": str(folder / "lab-settings")}}
            if role == "student":
                extensions["lecture2_hub.validate_button"] = True
                server["ServerApp"]["kernel_manager_class"] = "lecture2_hub.kernels.CappedKernelManager"
                server["CappedKernelManager"] = {"max_kernels": limits.kernels}
            _write(folder / "jupyter_server_config.json", json.dumps(server, indent=1) + "\n")
            _write(folder / "lab-settings" / "overrides.json", json.dumps(lab_defaults(edition), indent=1) + "\n")
            _write(folder / "labconfig" / "page_config.json", json.dumps(
                {"disabledExtensions": {f"@jupyter/nbgrader:{d}": True for d in off}}, indent=1) + "\n")
            shown = f"c.List.shown = [{editions.EDITIONS[edition].folder!r}]\n" if role == "student" else ""
            _write(folder / "nbgrader_config.py", nbgrader + shown)
    for folder in (state / "config", *folders, *(f / sub for f in folders for sub in ("labconfig", "lab-settings"))):
        os.chmod(folder, 0o755)


def lab_defaults(edition: str) -> dict:
    """The lab's settings defaults for `edition`'s servers: LAB_DEFAULTS and the lab's language (JupyterLab's
    translation setting: zh_CN, from jupyterlab-language-pack-zh-CN, or en). Each person may change them."""
    return {**LAB_DEFAULTS, "@jupyterlab/translation-extension:plugin": {"locale": editions.EDITIONS[edition].locale}}


def as_user(entry: pwd.struct_passwd) -> dict:
    """subprocess.run's arguments that run a command as `entry` (no supplementary groups)."""
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


def release(course: Path, exchange: Path, owner: pwd.struct_passwd) -> str:
    """Each edition's release (notebooks/lec02, notebooks/lec02-en) into the exchange as an assignment of its own
    (lec02, lec02-en: each student fetches the one of their edition, lecture2_hub.roster), as the course's owner
    (nbgrader release_assignment --force: students' fetched copies stay). Never as root: what it replaces in
    outbound/ is the owner's alone. The lines said."""
    return "\n".join(release_one(course, exchange, owner, e.folder) for e in editions.EDITIONS.values()
                     if (course / "notebooks" / e.folder).is_dir())


def release_one(course: Path, exchange: Path, owner: pwd.struct_passwd, assignment: str = ASSIGNMENT) -> str:
    """notebooks/<assignment> into the exchange as the course's owner."""
    env = {"PATH": f"{course / '.venv' / 'bin'}:/usr/local/bin:/usr/bin:/bin", "HOME": owner.pw_dir,
           "USER": owner.pw_name, "LANG": os.environ.get("LANG", "C.UTF-8")}
    proc = subprocess.run([str(course / ".venv" / "bin" / "nbgrader"), "release_assignment", assignment, "--force",
                           f"--Exchange.root={exchange}", f"--CourseDirectory.course_id={settings.COURSE_ID}",
                           *exchange_classes.factory_options()],
                          cwd=course, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          **as_user(owner))
    if proc.returncode != 0:
        raise ReleaseError(f"nbgrader release_assignment {assignment} failed (as {owner.pw_name}):\n"
                           f"{(proc.stdout + proc.stderr)[-3000:]}")
    count = len(list((course / "notebooks" / assignment).glob("*.ipynb")))
    return (f"released notebooks/{assignment} ({count} notebook{'s' if count != 1 else ''}) into "
            f"{exchange / settings.COURSE_ID / 'outbound'}, as {owner.pw_name}")
