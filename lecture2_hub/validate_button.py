"""The Validate button of a student's lab on the hub, answered by the course's grader instead of nbgrader's.

nbgrader's Validate runs the notebook as it is and reports the cells that raised; the course's checks score
named groups and print hints, so the two could disagree. This Jupyter server extension (enabled for students by
the hub in place of nbgrader.server_extensions.validate_assignment) answers the same two requests nbgrader's
button makes, POST /assignments/validate and GET /nbgrader_version, with what `make validate` says: the score of
the visible checks and, per exercise and group, what was expected and the hint (lecture2_grader.validate, run as
the student, on the saved notebook). nbgrader's dialog shows it as "failed" cells until every visible check
passes, then its "Success!".
"""
from __future__ import annotations

import html
import json
import subprocess
import sys
from pathlib import Path

from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.utils import url_path_join
from tornado import web
from tornado.ioloop import IOLoop

from lecture2_grader.messages import say, student_language

TIMEOUT_S = 600


def reply(returncode: int, stdout: str, stderr: str = "") -> dict:
    """nbgrader's validate reply ({"success": ..., "value": ...}) for what `make validate` printed."""
    lines = stdout.rstrip("\n").split("\n")
    if returncode != 0 or not stdout.strip():
        return {"success": False, "value": (stdout + stderr[-2000:]).strip()}
    if all(not line.lstrip().startswith(("❌", "⏳", "⚠")) for line in lines):
        return {"success": True, "value": {}}  # every visible check passed: nbgrader's "Success!"
    # nbgrader's dialog puts `error` in the page as HTML: escaped here
    return {"success": True, "value": {"failed": [{"source": lines[0], "error": html.escape("\n".join(lines[1:]))}]}}


def run_validate(path: Path) -> dict:
    """`make validate`'s pipeline on the notebook at `path`, as nbgrader's validate reply."""
    try:
        proc = subprocess.run([sys.executable, "-m", "lecture2_grader.validate", str(path)], capture_output=True,
                              text=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return {"success": False, "value": say("button.timeout", student_language(path), seconds=TIMEOUT_S)}
    return reply(proc.returncode, proc.stdout, proc.stderr)


class ValidateHandler(JupyterHandler):
    @web.authenticated
    async def post(self):
        try:
            path = self.get_argument("path")
        except web.MissingArgumentError:
            path = (self.get_json_body() or {}).get("path", "")
        root = Path(self.settings["server_root_dir"]).expanduser().resolve()
        target = (root / path).resolve()
        if not target.is_relative_to(root) or not target.is_file():
            raise web.HTTPError(403, "not a notebook of yours")
        reply = await IOLoop.current().run_in_executor(None, run_validate, target)
        self.finish(json.dumps(reply))


class VersionHandler(JupyterHandler):
    @web.authenticated
    def get(self):
        from nbgrader import __version__

        ok = self.get_argument("version", "") == __version__
        self.finish(json.dumps({"success": ok, "message": "" if ok else f"nbgrader {__version__} on the server"}))


def _jupyter_server_extension_points():
    return [{"module": "lecture2_hub.validate_button"}]


def _load_jupyter_server_extension(serverapp):
    base = serverapp.web_app.settings["base_url"]
    serverapp.web_app.add_handlers(".*$", [(url_path_join(base, "assignments/validate"), ValidateHandler),
                                           (url_path_join(base, "nbgrader_version"), VersionHandler)])
