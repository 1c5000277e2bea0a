"""Predict, then measure: the student writes a number in a prediction cell before a measurement, and the measuring
cell sets it beside what was measured.

A prediction cell is a code cell whose metadata names it (`{"lecture2": {"prediction": "<key>"}}`, tag
`prediction`) and whose only statements assign literals to names: `my_fp16_max = None  # your number`. The release
leaves every value None; the student replaces it before running the cell below. Predictions never change a
point. The grader reads each prediction cell's literals from the submitted file as data (never running it) and
the class report shows the class's predictions beside the measurement.

The measuring cell calls `compare(prediction, measured, key=..., what=...)`: one line per value with the
prediction, the measurement and their ratio (measured / predicted), or whether a choice was right. It also leaves
the same as data in the cell's output (MIME_TYPE), which the class report reads from the instructor's executed
notebook: the measurement beside the class's predictions.
"""
from __future__ import annotations

import math
import numbers

from . import editions, messages

MIME_TYPE = "application/vnd.lecture2.prediction+json"
NOT_YET = messages.say("predict.not_yet", "zh")


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    value = float(value)
    return None if math.isnan(value) else value


def shown(value: object) -> str:
    """A value as the student wrote it: a count exactly (40,960), other numbers to 4 significant digits."""
    number = _number(value)
    if number is None:
        return repr(value)
    if number.is_integer() and abs(number) < 1e15:
        return f"{int(number):,}"
    return f"{number:.4g}" if abs(number) < 1e5 else f"{number:.3e}"


def line(prediction: object, measured: object, what: str = "", lang: str | None = None) -> str:
    """One comparison as text: the prediction, the measurement, and their ratio (or right / not right), in `lang`
    (default: the edition of the notebook this kernel runs, lecture2.editions.kernel_edition)."""
    lang = lang or editions.kernel_edition()
    label = f"{what}: " if what else ""
    if prediction is None:
        return messages.say("predict.measured_only", lang, label=label, measured=shown(measured),
                            not_yet=messages.say("predict.not_yet", lang))
    p, m = _number(prediction), _number(measured)
    if p is not None and m is not None:
        if p == 0:
            ratio = "∞" if m else "1"
        else:
            ratio = f"{m / p:.3g}"
        return messages.say("predict.ratio", lang, label=label, predicted=shown(prediction), measured=shown(measured),
                            ratio=ratio)
    right = messages.say("predict.right" if prediction == measured else "predict.wrong", lang)
    return messages.say("predict.choice", lang, label=label, predicted=shown(prediction), measured=shown(measured),
                        right=right)


def lines(record_: dict, lang: str) -> str:
    """The text `compare` printed for a comparison record (its MIME data), in `lang`: the course's site shows an
    executed notebook's comparisons in the page's language from this data."""
    values = record_.get("values") if isinstance(record_.get("values"), dict) else {}
    what = str(record_.get("what") or "")
    return "\n".join(line(v.get("predicted"), v.get("measured"), f"{what} {k}".strip(), lang)
                     for k, v in values.items() if isinstance(v, dict))


def record(prediction: object, measured: object, key: str, what: str = "") -> dict:
    """The comparison as plain data (what the cell's output carries for the class report)."""
    if isinstance(prediction, dict) or isinstance(measured, dict):
        prediction = prediction if isinstance(prediction, dict) else {}
        measured = measured if isinstance(measured, dict) else {}
        values = {str(k): {"predicted": _plain(prediction.get(k)), "measured": _plain(v)} for k, v in measured.items()}
    else:
        values = {"": {"predicted": _plain(prediction), "measured": _plain(measured)}}
    return {"key": key, "what": what, "values": values}


def _plain(value: object) -> object:
    """A value as JSON can hold it: numbers, strings, booleans, None; anything else as its repr."""
    if value is None or isinstance(value, (bool, str)):
        return value
    number = _number(value)
    if number is not None:
        return int(number) if isinstance(value, numbers.Integral) else number
    return repr(value)[:200]


def compare(prediction: object, measured: object, *, key: str, what: str = "") -> None:
    """Print the prediction beside the measurement (a dict of predictions beside a dict of measurements, key by key)
    and leave the same as data in the cell's output (`record`). `key`: the prediction cell's key."""
    data = record(prediction, measured, key, what)
    lang = editions.kernel_edition()
    if isinstance(measured, dict):
        predictions = prediction if isinstance(prediction, dict) else {}
        text = "\n".join(line(predictions.get(k), v, f"{what} {k}".strip(), lang) for k, v in measured.items())
    else:
        text = line(prediction, measured, what, lang)
    try:
        from IPython.display import display

        from IPython import get_ipython

        if get_ipython() is not None:
            display({"text/plain": text, MIME_TYPE: data}, raw=True)
            return
    except ImportError:
        pass
    print(text)
