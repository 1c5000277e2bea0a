"""The lab in the student's edition: a failed check shown in the language of the notebook the kernel runs.

lecture2.checks raises CheckFailed with a message built in the source language (Chinese, with the English terms).
In a kernel whose notebook is of another edition (lecture2.editions.kernel_edition), `install` gives IPython a
handler for it (InteractiveShell.set_custom_exc, IPython's own hook for showing an exception type its own way): the
same traceback, its message with the fixed words and the hint in the notebook's language (lecture2.messages.localize).
Nothing else changes: the check ran as in any edition, and what it decided is what it raised.

`python -m lecture2.lab EDITION SETTINGS_DIR` (what `make lab EDITION=en` runs) sets JupyterLab's own language for
the edition (write_locale) and prints the folder the lab opens.

`import lecture2` calls `install` in a Jupyter kernel (the server names its notebook: JPY_SESSION_NAME); it imports
nothing heavy and does nothing outside IPython or in the source language's edition.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from . import editions, messages


def _localized(value: BaseException, lang: str) -> BaseException:
    """A CheckFailed like `value`, its message in `lang` (anything else as it is)."""
    checks = sys.modules.get("lecture2.checks")
    if checks is None or not isinstance(value, checks.CheckFailed):
        return value
    shown = checks.CheckFailed(messages.localize(str(value), lang, value.hint_key), what=value.what, want=value.want,
                               hint=value.hint, hint_key=value.hint_key, got=value.got, ratio=value.ratio,
                               difference=value.difference)
    shown.__cause__, shown.__context__ = value.__cause__, value.__context__
    return shown


def install(shell=None) -> str | None:
    """Show failed checks in the kernel's edition's language; returns that language when a handler was installed."""
    if shell is None:
        ipython = sys.modules.get("IPython")
        shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    if shell is None or not hasattr(shell, "set_custom_exc"):
        return None
    lang = editions.kernel_edition()
    if lang == editions.SOURCE:
        return None

    def show(self, etype, value, tb, tb_offset=None):
        value = _localized(value, lang)
        return self.showtraceback((type(value), value, tb), tb_offset=tb_offset)

    shell.set_custom_exc((AssertionError,), show)  # CheckFailed is an AssertionError; others are shown as they are
    return lang


# ---- the lab's own language: JupyterLab's translation setting, per edition

TRANSLATION = Path("@jupyterlab") / "translation-extension" / "plugin.jupyterlab-settings"


def write_locale(settings_dir: Path, edition: str) -> Path:
    """Set JupyterLab's language (its translation setting, under the user settings folder `settings_dir`, which
    JUPYTERLAB_SETTINGS_DIR names) to `edition`'s locale: zh_CN (jupyterlab-language-pack-zh-CN: the menus, the
    Assignments tab) or en (JupyterLab's own). Any other setting of that file is kept; a file that is not JSON is
    replaced. Returns the file written."""
    path = settings_dir / TRANSLATION
    try:
        held = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        held = {}
    held = held if isinstance(held, dict) else {}
    held["locale"] = editions.EDITIONS[edition].locale
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(held, indent=2) + "\n", encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    """`make lab EDITION=...`: `python -m lecture2.lab EDITION SETTINGS_DIR` sets the lab's language for the edition
    and prints the edition's release folder (lec02, lec02-en), the folder the lab opens."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] not in editions.EDITIONS:
        names = ", ".join(f"{code} ({e.folder})" for code, e in editions.EDITIONS.items())
        print(f"EDITION={args[0] if args else ''!r} is not an edition of the course: one of {names}", file=sys.stderr)
        return 2
    write_locale(Path(args[1]), args[0])
    print(editions.EDITIONS[args[0]].folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
