"""The lab in the student's edition: a failed check shown in the language of the notebook the kernel runs.

lecture2.checks raises CheckFailed with a message built in the source language (Chinese, with the English terms).
In a kernel whose notebook is of another edition (lecture2.editions.kernel_edition), `install` gives IPython a
handler for it (InteractiveShell.set_custom_exc, IPython's own hook for showing an exception type its own way): the
same traceback, its message with the fixed words and the hint in the notebook's language (lecture2.messages.localize).
Nothing else changes: the check ran as in any edition, and what it decided is what it raised.

`import lecture2` calls `install` in a Jupyter kernel (the server names its notebook: JPY_SESSION_NAME); it imports
nothing heavy and does nothing outside IPython or in the source language's edition.
"""
from __future__ import annotations

import sys

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
