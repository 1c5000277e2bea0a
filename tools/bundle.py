"""Build what students receive: the release notebooks, lecture2, a student README and the environment files.

    .venv/bin/python -m tools.bundle [--out dist/lecture2-student.zip]     (what `make bundle` runs)

Nothing else goes in but `docs/planning.md` (the planner's formulas, sources and the conformance table notebook 11
and lecture2.planner's messages cite): no solutions/, no tests (their planted mistakes are answers too), no grading
artefacts, no tools/. The grader package (lecture2_grader, a package of the distribution) goes in whole: it
holds no answer and no hidden test, and `make validate` runs its pipeline. The bundle's Makefile sets up and
opens the lab exactly as the course's does, with nbgrader's instructor tools switched off (jupyter-config/), and
adds `make handin` (lecture2_grader.handin: validate, then the one zip to upload).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import zipfile
from pathlib import Path

from lecture2 import editions

ROOT = Path(__file__).resolve().parent.parent
ASSIGNMENT = "lec02"

STUDENT_README = """# Lecture 2 — PyTorch and compute accounting (student bundle)

You need Python ≥ 3.10 and `make`. In this folder:

```bash
make lab EDITION=en   # set up .venv (PyTorch 2.13.0, JupyterLab, lecture2), then open the English edition
```

The course comes in two editions with the same exercises, checks and points: `make lab EDITION=en` opens the
English one (`notebooks/lec02-en/`) in an English JupyterLab; `make lab` opens the Chinese one (`notebooks/lec02/`)
in JupyterLab's Simplified Chinese. Work in one of them; write `EDITION=en` with `make validate` and `make handin`
too when it is the English one. A notebook not yet translated says so at its top and is in Chinese.

The first run takes a few minutes (it downloads PyTorch and JupyterLab into `.venv/` here); later runs start at
once. `make lab` opens JupyterLab in your web browser; where there is none (a server, SSH) it prints a URL with
a token (`http://127.0.0.1:8888/lab?token=...`) to open in a browser that reaches the machine (over SSH:
`ssh -L 8888:127.0.0.1:8888 HOST` first). `make lab LAB_ARGS=--no-browser` only prints it. Stop it with Ctrl-C.

**No NVIDIA GPU (Linux)?** `make lab TORCH=cpu` the first time installs PyTorch's CPU-only build of the same
release from PyTorch's own wheel index (https://download.pytorch.org/whl/cpu): a `.venv` of about 1.5 GB
instead of about 5 GB with the CUDA libraries that pip takes by default on Linux. The choice is kept for later
runs. To switch a `.venv` that already exists: `rm -rf .venv`, then `make lab TORCH=cpu`. On macOS and Windows
pip's default build is already the right one.

`make env` (or `.venv/bin/python -m lecture2 env`) prints what your machine has: device, dtype support, the
peak FLOP/s that applies. Commands of the package need the environment's Python, `.venv/bin/python`; a
plain `python` outside it does not have PyTorch.

Work through `notebooks/lec02-en/` (or `notebooks/lec02/`) in order. Each exercise is a function in a cell marked `YOUR CODE HERE`;
the check cell under it says ✅ or tells you what was expected, what came back, and a hint. Hidden checks run
when your instructor grades. Before handing in, validate each notebook as the grader will:

```bash
make validate NOTEBOOK=notebooks/lec02-en/01_tensors_dtypes.ipynb    # or `make validate EDITION=en` for all
```

When your instructor grades, your answer cells (and your own cells that only define functions, classes or
constants: your helpers) run in a process of their own, and the check cells in another, which hands your
functions each check's inputs and takes back what they return. Write your answers however you like (prints,
helpers, imports are fine); only the checks decide the points. `make validate` runs the same pipeline on the
visible checks and prints the score they give, in your notebook's language.

## Handing in

```bash
make handin EDITION=en                  # validate every notebook, then write lec02-handin.zip here
make handin EDITION=en STUDENT=your-id  # the same, for e-mail or a shared folder: alice-lec02-handin.zip
```

`make handin` prints one line per notebook (the visible checks' points: a low score is fine, it only shows
where you stand) and writes one zip with every notebook of your edition's folder as you saved it (save them in
Jupyter first). It exits with an error only when a notebook cannot be read; it says which one.

- **Canvas or Moodle**: upload `lec02-handin.zip` to the assignment (Canvas: *Submit Assignment* > *Upload File*;
  Moodle: *Add submission*, drop the file, *Save changes*). The LMS puts your name on it. Handing in again later
  (a late or corrected notebook) is fine: upload a new zip, or only that notebook, under its own name
  (`09_training_cost.ipynb`); your other notebooks stay as they were handed in.
- **By e-mail or a shared folder**: `make handin STUDENT=your-id` (the id your instructor gave you) and send
  `your-id-lec02-handin.zip`.
- **JupyterHub with nbgrader's Assignments tab**: your instructor's hub shows *Assignments*; there *Fetch* the
  assignment of your edition (`lec02-en` in English, `lec02` in Chinese), work in the fetched folder, and
  *Submit*. Nothing else to do.

Keep the file names as they are: the grader recognises a notebook by its name (a renamed one by its cells).

## 学生版说明

需要 Python ≥ 3.10 和 `make`。在这个文件夹里运行：

```bash
make lab     # 建立 .venv（PyTorch 2.13.0、JupyterLab、lecture2），然后打开中文版
```

课程有两个版本，练习、检查和分数完全相同：`make lab` 打开中文版（`notebooks/lec02/`），JupyterLab 界面也是简体中文；
`make lab EDITION=en` 打开英文版（`notebooks/lec02-en/`），界面是英文。用其中一个版本做题；用英文版时，
`make validate` 和 `make handin` 也要加上 `EDITION=en`。

第一次运行要几分钟（把 PyTorch 和 JupyterLab 下载到这里的 `.venv/`），以后会立即启动。`make lab` 会在浏览器中
打开 JupyterLab；没有浏览器时（服务器、SSH）它会打印一个带 token 的网址（`http://127.0.0.1:8888/lab?token=...`），
在能访问这台机器的浏览器里打开即可（通过 SSH 时先运行 `ssh -L 8888:127.0.0.1:8888 HOST`）。
`make lab LAB_ARGS=--no-browser` 只打印网址。按 Ctrl-C 停止。

**没有 NVIDIA GPU（Linux）？** 第一次运行时用 `make lab TORCH=cpu`：它从 PyTorch 自己的 wheel 源
（https://download.pytorch.org/whl/cpu）安装同一版本的纯 CPU 版 PyTorch，`.venv` 约 1.5 GB；pip 在 Linux 上默认
安装的是带 CUDA 库的版本，约 5 GB。这个选择会保留给以后的运行。已经建好的 `.venv` 要换成 CPU 版：先
`rm -rf .venv`，再 `make lab TORCH=cpu`。macOS 和 Windows 上 pip 默认安装的就是合适的版本。

`make env`（或 `.venv/bin/python -m lecture2 env`）显示你的机器有什么：设备、支持的数据类型、适用的峰值 FLOP/s。
这个包的命令要用环境里的 Python，即 `.venv/bin/python`；环境外的 `python` 没有装 PyTorch。

按顺序完成 `notebooks/lec02/`。每个练习是一个函数，写在标有 `YOUR CODE HERE` 的单元格里；下面的检查单元格
通过时显示 ✅，否则告诉你期望值、你的结果和提示。交作业前用 `make validate NOTEBOOK=...`（或 `make validate`
检查全部）按评分的方式检查：评分时你的答案单元格和你自己加的、只定义函数、类或常量的单元格在一个单独的进程里运行，
检查单元格在另一个进程里运行；`make validate` 走同样的流程，给出可见检查的得分（隐藏检查在老师评分时才运行）。
中文版里的说明、提示和检查信息是中文的，技术术语附英文。

## 交作业

```bash
make handin                  # 检查每个 notebook，然后在这里写出 lec02-handin.zip
make handin STUDENT=你的学号   # 同上，用于通过邮件或共享文件夹交作业：写出 你的学号-lec02-handin.zip
```

`make handin` 每个 notebook 打印一行（可见检查的得分：分数低没关系，只是告诉你现在的情况），然后把
你所用版本的文件夹（中文版是 `notebooks/lec02/`）里保存好的所有 notebook 写进一个 zip（先在 Jupyter 里保存）。只有某个 notebook 读不出来时
它才报错退出，并说明是哪一个。

- **Canvas 或 Moodle**：把 `lec02-handin.zip` 上传到作业（Canvas：*Submit Assignment* > *Upload File*；
  Moodle：*Add submission*，拖入文件，*Save changes*）。课程网站会在文件上加上你的名字。之后再交（迟交或改过的
  notebook）也可以：上传新的 zip，或只上传那一个 notebook，保持原名（如 `09_training_cost.ipynb`）；你的其他
  notebook 保持原来交的样子。
- **邮件或共享文件夹**：运行 `make handin STUDENT=你的学号`（老师给你的编号），发送 `你的学号-lec02-handin.zip`。
- **JupyterHub 上 nbgrader 的 Assignments 页面**：老师的 hub 上有 *Assignments*；在那里 *Fetch* 你的版本的作业（中文版 `lec02`），在取回的
  文件夹里做题，然后 *Submit*，不需要别的步骤。

不要改文件名：评分程序按文件名识别 notebook（改了名的按它的单元格识别）。
"""

# The course Makefile's setup, lab and env rules, between these two marker lines, go into the student Makefile
# verbatim: a student sets up and opens the lab exactly as the course does (TORCH=cpu and root included).
SHARED_BEGIN, SHARED_END = "# >>> setup, lab, env", "# <<< end of the block shared"

STUDENT_MAKEFILE = """# Lecture 2, student bundle.
#   make lab                  set up .venv the first time, then open JupyterLab on notebooks/lec02 (中文版)
#   make lab EDITION=en       the English edition, notebooks/lec02-en, in an English JupyterLab (EDITION=en also
#                             for validate and handin)
#   make lab TORCH=cpu        the same with PyTorch's CPU-only build (the first time, before .venv exists)
#   make env                  print what this machine has (device, dtypes, the peak FLOP/s that applies)
#   make validate NOTEBOOK=notebooks/lec02/01_tensors_dtypes.ipynb   check a notebook as the grader will
#   make validate             check every notebook
#   make handin               validate every notebook, then write lec02-handin.zip to upload to the LMS
#   make handin STUDENT=ID    the same as ID-lec02-handin.zip, to hand in by e-mail or a shared folder
EXTRAS :=
# The lab reads jupyter-config/ first: nbgrader's instructor tools (formgrader, Create Assignment, the Nbgrader
# menu, its Validate button, which judges differently from `make validate`) are switched off for students.
export JUPYTER_CONFIG_PATH := $(CURDIR)/jupyter-config
{shared}
.PHONY: validate handin
NOTEBOOK ?= $(wildcard notebooks/$(if $(filter en,$(EDITION)),lec02-en,lec02)/*.ipynb)
validate: setup
\t$(BIN)/python -m lecture2_grader.validate $(NOTEBOOK)

handin: setup
\t$(BIN)/python -m lecture2_grader.handin --edition $(EDITION) $(if $(STUDENT),--student "$(STUDENT)")
"""

# The student's lab: nbgrader's lab extension and server extensions off (JUPYTER_CONFIG_PATH, set by the
# student Makefile, is read before the environment's own etc/jupyter, so these settings win).
NBGRADER_SERVER_EXTENSIONS = ("formgrader", "validate_assignment", "assignment_list", "course_list")
STUDENT_JUPYTER_CONFIG = {
    "jupyter-config/jupyter_server_config.json": {
        "ServerApp": {"jpserver_extensions": {f"nbgrader.server_extensions.{n}": False
                                              for n in NBGRADER_SERVER_EXTENSIONS}}},
    "jupyter-config/labconfig/page_config.json": {"disabledExtensions": {"@jupyter/nbgrader": True}},
}

# Documents a student's files cite (notebook 11, lecture2.planner's notes): shipped as they are in the course.
STUDENT_DOCS = ("docs/planning.md",)

# The packages of the distribution a student's environment installs (pyproject.toml names them).
PACKAGES = ("lecture2", "lecture2_grader")

# nbgrader (the lab's nbgrader extensions, `nbgrader validate`) looks for this file in the folder it starts in
# and warns when there is none. It runs a notebook with the grader's per-cell time limit.
STUDENT_NBGRADER_CONFIG = """\"\"\"nbgrader settings for the student bundle (read by `make validate` and JupyterLab's nbgrader extensions).\"\"\"
c = get_config()  # noqa: F821  (provided by nbgrader when it loads this file)

# Torch work is slower than nbgrader's 30 s default per cell; a hung cell still ends (as when grading).
c.ExecutePreprocessor.timeout = 300
c.ExecutePreprocessor.interrupt_on_timeout = True

# The kernel talks to nbgrader over local TCP: encrypt it where pyzmq has CurveZMQ (its wheels do), so that
# ipykernel does not warn that the traffic is plain text.
import zmq  # noqa: E402
from jupyter_client.manager import KernelManager  # noqa: E402

if zmq.has("curve") and KernelManager.class_traits().get("transport_encryption"):
    c.KernelManager.transport_encryption = "auto"
"""


def shared_make_block() -> str:
    """The lines of the course Makefile between the markers SHARED_BEGIN and SHARED_END (both kept)."""
    lines = (ROOT / "Makefile").read_text(encoding="utf-8").splitlines(keepends=True)
    begin = next(i for i, line in enumerate(lines) if line.startswith(SHARED_BEGIN))
    end = next(i for i, line in enumerate(lines) if line.startswith(SHARED_END))
    return "".join(lines[begin:end + 1])


def student_makefile() -> str:
    """The bundle's Makefile: the course's setup/lab/env block, without the test extra, and `validate`."""
    return STUDENT_MAKEFILE.replace("{shared}", shared_make_block().rstrip("\n"))


def bundle_files() -> dict[str, bytes]:
    """Archive path -> content of everything a student receives: both editions (notebooks/lec02, notebooks/lec02-en,
    with their clean copies in .release/)."""
    files: dict[str, bytes] = {}
    folders = [e.folder for e in editions.EDITIONS.values() if (ROOT / "notebooks" / e.folder).is_dir()]
    for folder in folders:
        for path in sorted((ROOT / "notebooks" / folder).glob("*.ipynb")):
            files[f"notebooks/{folder}/{path.name}"] = path.read_bytes()
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*")):
            if path.suffix in (".py", ".json") and "__pycache__" not in path.parts:
                files[str(path.relative_to(ROOT))] = path.read_bytes()
    for folder in folders:  # the clean copies `make validate` reads the checks from
        for path in sorted((ROOT / "notebooks" / folder).glob("*.ipynb")):
            files[f".release/{folder}/{path.name}"] = path.read_bytes()
    for doc in STUDENT_DOCS:  # what notebook 11 and the planner's messages cite
        files[doc] = (ROOT / doc).read_bytes()
    files["pyproject.toml"] = (ROOT / "pyproject.toml").read_bytes()
    files["environment.yml"] = (ROOT / "environment.yml").read_bytes()
    files["README.md"] = STUDENT_README.encode("utf-8")
    files["Makefile"] = student_makefile().encode("utf-8")
    files["nbgrader_config.py"] = STUDENT_NBGRADER_CONFIG.encode("utf-8")
    for name, config in STUDENT_JUPYTER_CONFIG.items():
        files[name] = (json.dumps(config, indent=1) + "\n").encode("utf-8")
    return files


def write_jupyter_config(folder: Path) -> Path:
    """The student lab's jupyter-config/ under `folder` (for a test that opens the lab as a student does)."""
    for name, config in STUDENT_JUPYTER_CONFIG.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(config, indent=1) + "\n", encoding="utf-8")
    return folder / "jupyter-config"


def write(out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in bundle_files().items():
            info = zipfile.ZipInfo(f"lecture2-student/{name}", date_time=time.localtime()[:6])
            info.external_attr = 0o644 << 16  # rw-r--r-- once unzipped (writestr's default is rw-------)
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.bundle", description="Build the student bundle (a zip).")
    parser.add_argument("--out", type=Path, default=ROOT / "dist" / "lecture2-student.zip")
    args = parser.parse_args(argv)
    if not (ROOT / "notebooks" / ASSIGNMENT).is_dir():
        parser.error(f"no release in notebooks/{ASSIGNMENT}: run `make release` first")
    path = write(args.out)
    print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
