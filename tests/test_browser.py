"""The student's path in a real browser: JupyterLab opens every release notebook, renders it, and runs some.

The test starts JupyterLab from the course's own environment (this interpreter's `jupyter`) on a free
loopback port with a random token, over a scratch copy of `notebooks/`, and drives headless Chromium
(Debian's `chromium`; Playwright only drives it, its own browser download is not used). Every notebook is
opened and its Chinese prose and math must render; "Run > Run All Cells" runs in the notebook of RUN_ALL, the
one whose exercise is filled in with its reference solution (the page shows the course's success line for it and
its "not implemented yet" notice for every other one). That every release notebook runs to its end in a Jupyter
kernel (notebook 10's live groups started from it included), each unfilled check printing its notice, is
tests/test_exercises.py::test_release_runs_to_the_end_in_the_lab (no browser needed): a notebook runs once per
purpose. A screenshot per notebook goes to `.artefacts/screenshots/`.

Run it alone with `make test PYTEST_ARGS="-m browser"`. It is skipped when Playwright or Chromium is
missing, unless LECTURE2_BROWSER_REQUIRED is set (CI sets it: there a missing browser fails).
"""
from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from conftest import ASSIGNMENT, BIN, RELEASE, ROOT, SOLUTIONS, notebook_names
from lecture2_hub.preflight import free_port
from tools import bundle

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SCREENSHOTS = ROOT / ".artefacts" / "screenshots"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# The exercise filled in with its reference solution before the browser opens it, and the name its
# check cell passes to checks.exercise.
FILLED = ("01_tensors_dtypes.ipynb", "ex01_tensor_bytes", "tensor_bytes")
# The notebook run with Run All in the browser: the filled one.
RUN_ALL = [FILLED[0]]
RUN_TIMEOUT_S = 240  # one notebook's Run All on a slow 2-core CPU takes 15-40 s
SUCCESS = "检查通过 (all checks passed)"
NOT_YET = "还没有完成 (not implemented yet)"


def _unavailable(reason: str):
    if os.environ.get("LECTURE2_BROWSER_REQUIRED"):
        pytest.fail(reason)
    pytest.skip(reason)


def _chromium() -> str:
    path = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not os.access(path, os.X_OK):
        _unavailable(f"no Chromium at {path} (apt-get install chromium)")
    return path


def _fill(nb_path: Path, grade_id: str) -> None:
    """Replace the stub cell `grade_id` with the reference solution (markers removed), outputs cleared."""
    solution = nbformat.read(SOLUTIONS / nb_path.name, as_version=4)
    source = next(c.source for c in solution.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
    source = "\n".join(line for line in source.splitlines() if "### BEGIN SOLUTION" not in line
                       and "### END SOLUTION" not in line)
    nb = nbformat.read(nb_path, as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
    assert "NotImplementedError" in cell.source, "the release's stub is expected here"
    cell.source = source
    nbformat.write(nb, nb_path)


def _api(base: str, token: str, path: str, method: str = "GET"):
    req = urllib.request.Request(f"{base}{path}", method=method, headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        body = resp.read()
    return json.loads(body) if body else None


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server on 127.0.0.1 over a scratch copy of the release; stopped whatever happens."""
    root = tmp_path_factory.mktemp("lab")
    shutil.copytree(RELEASE, root / ASSIGNMENT)
    _fill(root / ASSIGNMENT / FILLED[0], FILLED[1])
    # Settings of our own: every cell stays in the page (no windowing), no news pop-up.
    settings = root / ".lab-settings"
    for plugin, values in {"@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
                           "@jupyterlab/apputils-extension/notification": {"fetchNews": "false",
                                                                           "checkForUpdates": False}}.items():
        package, name = plugin.rsplit("/", 1)
        (settings / package).mkdir(parents=True, exist_ok=True)
        (settings / package / f"{name}.jupyterlab-settings").write_text(json.dumps(values))
    port, token = free_port(), secrets.token_hex(16)
    env = dict(os.environ)
    env.pop("NBGRADER_EXECUTION", None)
    env.update(JUPYTER_CONFIG_DIR=str(root / ".jupyter-config"), JUPYTER_RUNTIME_DIR=str(root / ".jupyter-runtime"),
               JUPYTER_CONFIG_PATH=str(bundle.write_jupyter_config(root / ".bundle")),  # as the bundle's `make lab`
               JUPYTER_TOKEN=token)  # in the environment, not on the command line (which every user's `ps` shows)
    log = open(root / "jupyter.log", "w")
    proc = subprocess.Popen(
        [str(BIN / "jupyter"), "lab", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
         "--ServerApp.port_retries=0", f"--ServerApp.root_dir={root}",
         f"--LabApp.user_settings_dir={settings}", f"--LabApp.workspaces_dir={root / '.lab-workspaces'}",
         *(["--allow-root"] if os.geteuid() == 0 else [])],
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                pytest.fail(f"jupyter lab exited {proc.returncode}:\n{(root / 'jupyter.log').read_text()[-3000:]}")
            try:
                _api(base, token, "/api/status")
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"jupyter lab did not answer in 120 s:\n{(root / 'jupyter.log').read_text()[-3000:]}")
                time.sleep(0.5)
        yield base, token
    finally:
        try:  # kernels first, so none outlives the server
            for kernel in _api(base, token, "/api/kernels") or []:
                _api(base, token, f"/api/kernels/{kernel['id']}", method="DELETE")
        except OSError:
            pass
        for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(wait)
                break
            except subprocess.TimeoutExpired:
                continue
        log.close()


@pytest.fixture(scope="module")
def page(lab):
    """A headless Chromium page logged in to the lab (the token sets the cookie)."""
    try:
        from playwright import sync_api
    except ImportError:
        _unavailable("the playwright package is not installed (pip install -e '.[test]')")
    chromium = _chromium()
    base, token = lab
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            pg = browser.new_page(viewport={"width": 1400, "height": 1000})
            pg.on("dialog", lambda dialog: dialog.accept())
            pg.goto(f"{base}/lab?token={token}", timeout=120_000)
            yield pg
        finally:
            browser.close()


def _code_prompts(pg) -> list[str]:
    return [t.strip() for t in pg.locator(".jp-Notebook .jp-CodeCell .jp-InputArea-prompt").all_inner_texts()]


def test_the_students_lab_has_no_instructor_tools_and_opens_notebooks_clean(lab, page):
    """With the bundle's jupyter-config/ (its `make lab` sets JUPYTER_CONFIG_PATH): no Nbgrader menu, no Create
    Assignment or Formgrader, no nbgrader Validate button (it would judge differently from `make validate`); and a
    notebook opened is not marked modified at once (its kernelspec is the installed kernel's)."""
    import sys

    base, token = lab
    name = "09_training_cost.ipynb"
    _open(page, base, name)
    page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook-ExecutionIndicator[data-status='idle']").first.wait_for(timeout=120_000)
    page.wait_for_timeout(2000)  # the kernel's info has reached the notebook's metadata
    menus = [m.strip() for m in page.locator(".lm-MenuBar-itemLabel").all_inner_texts()]
    assert "Run" in menus and "Nbgrader" not in menus, menus
    toolbar = " ".join(page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Toolbar").all_inner_texts())
    assert "Validate" not in toolbar, toolbar
    try:  # the formgrader's server extension is off too
        _api(base, token, "/formgrader/api/status")
        served = True
    except OSError:
        served = False
    assert not served, "the formgrader answers in the student's lab"
    version = nbformat.read(RELEASE / name, as_version=4).metadata.get("language_info", {}).get("version")
    if version == ".".join(map(str, sys.version_info[:3])):  # JupyterLab also rewrites language_info on a change
        dirty = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.jp-mod-current.jp-mod-dirty")
        assert dirty.count() == 0, "the notebook was marked modified as soon as it opened"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "student_lab.png"))
    _stop_kernels(page, base, token)


def _close_tabs(pg) -> None:
    """File > Close All Tabs (the notebooks' kernels keep running: _stop_kernels ends them)."""
    if pg.locator(".jp-NotebookPanel").count():
        pg.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^File$")).click()
        pg.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Close All Tabs$")).click()
        deadline = time.monotonic() + 30
        while pg.locator(".jp-NotebookPanel").count() and time.monotonic() < deadline:
            discard = pg.locator(".jp-Dialog button", has_text=re.compile(r"^(Discard|Don't Save)$"))
            if discard.count():  # a notebook that ran asks whether to save it: not the release's business
                discard.first.click()
            pg.wait_for_timeout(200)
        assert pg.locator(".jp-NotebookPanel").count() == 0, "the notebooks' tabs did not close"


def _open(pg, base: str, name: str):
    """Open release notebook `name` as a student does, by a double click in the file browser of the lab this page
    holds (loaded once: a page load per notebook costs seconds of a core each), every tab before it closed; its
    notebook element once every code cell is in the page."""
    if pg.locator(".jp-LabShell").count() == 0:
        pg.goto(f"{base}/lab/tree/{ASSIGNMENT}?reset", timeout=120_000)
    _close_tabs(pg)
    listing = pg.locator(".jp-FileBrowser .jp-DirListing-item")
    item = listing.filter(has=pg.locator(".jp-DirListing-itemText", has_text=re.compile(rf"^{re.escape(name)}$")))
    if item.count() == 0:  # the file browser is elsewhere: into the assignment's folder
        folder = listing.filter(has=pg.locator(".jp-DirListing-itemText", has_text=re.compile(rf"^{ASSIGNMENT}$")))
        folder.first.dblclick(timeout=60_000)
    item.first.dblclick(timeout=60_000)
    notebook = pg.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook")
    notebook.locator(".jp-CodeCell").first.wait_for(timeout=120_000)
    n_code = sum(c.cell_type == "code" for c in nbformat.read(RELEASE / name, as_version=4).cells)
    deadline = time.monotonic() + 60  # cells are attached a few at a time
    while notebook.locator(".jp-CodeCell").count() < n_code and time.monotonic() < deadline:
        pg.wait_for_timeout(250)
    assert notebook.locator(".jp-CodeCell").count() == n_code, "every code cell is in the page"
    return notebook


def _prose_renders(notebook, name: str) -> None:
    """Chinese text in the rendered Markdown, and (where the notebook has math) formulas typeset by MathJax."""
    prose = "\n".join(notebook.locator(".jp-MarkdownCell .jp-RenderedMarkdown").all_inner_texts())
    assert re.search(r"[\u4e00-\u9fff]{4}", prose), f"{name}: no Chinese prose rendered"
    markdown = "".join(c.source for c in nbformat.read(RELEASE / name, as_version=4).cells
                       if c.cell_type == "markdown")
    if "$" in markdown:
        math = notebook.locator(".jp-RenderedMarkdown mjx-container, .jp-RenderedMarkdown .katex")
        math.first.wait_for(timeout=30_000)
        assert math.count() > 0


def _stop_kernels(pg, base: str, token: str) -> None:
    """Every tab closed, then every kernel shut down: the next notebook gets the CPU to itself (a kernel that ends
    under an open notebook would put a dialog in front of the next click)."""
    _close_tabs(pg)
    for kernel in _api(base, token, "/api/kernels") or []:
        _api(base, token, f"/api/kernels/{kernel['id']}", method="DELETE")


@pytest.mark.parametrize("name", notebook_names())
def test_every_notebook_opens_with_its_prose_and_math_rendered(lab, page, name):
    """Does each release notebook open in JupyterLab with every code cell in the page, its Chinese prose
    rendered and its math typeset by MathJax?"""
    base, token = lab
    notebook = _open(page, base, name)
    _prose_renders(notebook, name)
    if name not in RUN_ALL:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"{Path(name).stem}.png"))
    _stop_kernels(page, base, token)


@pytest.mark.parametrize("name", RUN_ALL)
def test_run_all_in_jupyterlab(lab, page, name):
    """Does Run All in JupyterLab start the kernel, import lecture2, reach the last cell, and show the course's
    own message under every exercise (✅ for the filled one, "not implemented yet" for the stubs) with no bare
    traceback?"""
    base, token = lab
    pg = page
    started = time.monotonic()
    notebook = _open(pg, base, name)
    # The kernel starts: the toolbar's indicator says idle.
    pg.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook-ExecutionIndicator[data-status='idle']").first.wait_for(timeout=120_000)

    # Run > Run All Cells, as a student does; clicked again if the notebook had not taken it yet.
    for attempt in range(3):
        notebook.locator(".jp-Cell").first.locator(".jp-InputPrompt").click()  # the notebook has focus
        pg.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
        pg.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and all(p in ("[ ]:", "") for p in _code_prompts(pg)):
            pg.wait_for_timeout(250)
        if not all(p in ("[ ]:", "") for p in _code_prompts(pg)):
            break
        pg.keyboard.press("Escape")

    # Run All reaches the end: every code cell gets an execution count, the last one the largest.
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while True:
        prompts = _code_prompts(pg)
        counts = [re.fullmatch(r"\[(\d+)\]:", p) for p in prompts]
        if prompts and all(counts):
            break
        if time.monotonic() > deadline:
            pytest.fail(f"{name}: Run All did not finish in {RUN_TIMEOUT_S} s; prompts: {prompts}")
        pg.wait_for_timeout(500)
    numbers = [int(m.group(1)) for m in counts]
    assert numbers[-1] == max(numbers) and len(set(numbers)) == len(numbers), numbers
    pg.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook-ExecutionIndicator[data-status='idle']").first.wait_for(timeout=60_000)

    outputs = "\n".join(notebook.locator(".jp-OutputArea-output").all_inner_texts())
    errors = notebook.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    tracebacks = [t for t in errors.all_inner_texts() if "Traceback" in t or "Error" in t]
    assert not tracebacks, f"{name}: a cell ended in a traceback:\n{tracebacks[0][-2000:]}"
    assert "ModuleNotFoundError" not in outputs and "Traceback" not in outputs

    # `import lecture2` works: the first code cell imports it and prints the torch version.
    first = "\n".join(notebook.locator(".jp-CodeCell").first.locator(".jp-OutputArea-output").all_inner_texts())
    assert "torch" in first, first

    _prose_renders(notebook, name)
    # Each exercise's check cell shows the course's message, not a bare traceback.
    nb = nbformat.read(RELEASE / name, as_version=4)
    checks = [c.metadata["nbgrader"]["grade_id"] for c in nb.cells
              if c.metadata.get("nbgrader", {}).get("grade", False) and c.cell_type == "code"]
    filled = name == FILLED[0]
    assert outputs.count(NOT_YET) == len(checks) - (1 if filled else 0), (checks, outputs[-3000:])
    if filled:
        assert f"✅ {FILLED[2]}: {SUCCESS}" in outputs
    else:
        assert SUCCESS not in outputs

    # A screenshot, with the first exercise's check output in view.
    target = notebook.locator(".jp-OutputArea-output", has_text="✅" if filled else "⏳").first
    target.scroll_into_view_if_needed()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=str(SCREENSHOTS / f"{Path(name).stem}.png"))

    _stop_kernels(pg, base, token)
    print(f"{name}: {time.monotonic() - started:.1f} s")
