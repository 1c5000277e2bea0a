"""The lab in the student's edition: a failed check, and an error of lecture2's own, shown in the language of the
notebook the kernel runs.

lecture2.checks raises CheckFailed with a message built in the source language (Chinese, with the English terms), and
lecture2's instruments refuse what they cannot do (ValueError, TypeError, KeyError, RuntimeError, lecture2's own
errors) in it too. In a kernel whose notebook is of another edition (lecture2.editions.kernel_edition), `install` gives
IPython a handler for them (InteractiveShell.set_custom_exc, IPython's own hook for showing an exception type its own
way): the same traceback, its message in the notebook's language (lecture2.messages.localize: the fixed words, the
hint, the fragments of lecture2.checks_en and lecture2.errors_en). An error is translated when it was raised in
lecture2's code (the innermost frame of its traceback is in the package) and its message holds Chinese: the same type,
made again with its message localized; one that cannot be made again from one message is shown as it is, as is
anything else. Nothing else changes: the check ran as in any edition, and what it decided is what it raised.

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


# The exception types the lab shows in the notebook's language when lecture2 raised them (CheckFailed: AssertionError;
# lecture2's own errors: subclasses of these, or of answers.AnswerError / AnswerUnavailable, added by `install`)
TRANSLATED = (AssertionError, ValueError, TypeError, KeyError, RuntimeError)
PACKAGE = Path(__file__).resolve().parent


def _raised_in_lecture2(tb) -> bool:
    """Whether the innermost frame of traceback `tb` is lecture2's code."""
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    try:
        return Path(tb.tb_frame.f_code.co_filename).resolve().is_relative_to(PACKAGE)
    except (OSError, ValueError):
        return False


def _localized(value: BaseException, lang: str, tb=None) -> BaseException:
    """A CheckFailed like `value`, its message in `lang`; an error raised in lecture2's code (`tb`, by default its own
    traceback) whose one message holds Chinese: the same type made again with that message in `lang`; anything else,
    or an error that cannot be made again from its message, as it is."""
    checks = sys.modules.get("lecture2.checks")
    if checks is not None and isinstance(value, checks.CheckFailed):
        shown = checks.CheckFailed(messages.localize(str(value), lang, value.hint_key), what=value.what,
                                   want=value.want, hint=value.hint, hint_key=value.hint_key, got=value.got,
                                   ratio=value.ratio, difference=value.difference)
    else:
        args = getattr(value, "args", ())
        if len(args) != 1 or not isinstance(args[0], str) or not messages.CHINESE.search(args[0]) \
                or not _raised_in_lecture2(tb if tb is not None else value.__traceback__):
            return value
        message = messages.localize(args[0], lang)
        try:
            shown = type(value)(message)
            if shown.args != (message,):
                return value
            shown.__dict__.update({k: v for k, v in vars(value).items() if k not in vars(shown)})
        except Exception:  # noqa: BLE001  made otherwise than from one message: shown as it is
            return value
    shown.__cause__, shown.__context__ = value.__cause__, value.__context__
    shown.__suppress_context__ = value.__suppress_context__
    return shown


def install(shell=None) -> str | None:
    """Show failed checks and lecture2's errors in the kernel's edition's language; returns that language when a
    handler was installed."""
    if shell is None:
        ipython = sys.modules.get("IPython")
        shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    if shell is None or not hasattr(shell, "set_custom_exc"):
        return None
    lang = editions.kernel_edition()
    if lang == editions.SOURCE:
        return None
    from . import answers  # lecture2's own errors that are no subclass of TRANSLATED (light: no torch)

    def show(self, etype, value, tb, tb_offset=None):
        value = _localized(value, lang, tb)
        return self.showtraceback((type(value), value, tb), tb_offset=tb_offset)

    # CheckFailed is an AssertionError; an error of another type, or not lecture2's, is shown as it is
    shell.set_custom_exc((*TRANSLATED, answers.AnswerError, answers.AnswerUnavailable), show)
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
