"""What lecture2 itself says, in each edition's language (lecture2.editions): one catalogue, each message once per
language. The grader's, the hub's and the command lines' messages are lecture2_grader.messages, the same kind of table.

    say(key, lang, **fields)   MESSAGES[key] in `lang` ("zh" or "en"), its {fields} filled in
    hint(key, lang)            a usual mistake's hint by its key: lecture2.checks.HINTS (zh), lecture2.hints_en (en)
    localize(message, lang)    a check's message as lecture2.checks builds it (in the source language) with its
                               fixed words ("期望 (expected)", "得到 (got)", "提示 (hint)") and the hint it ends with
                               in `lang`

A keyed table rather than gettext catalogues: two languages, a translator sees both of a message side by side, the
student bundle ships .py files only (no compiled .mo), and tests/test_messages.py holds every key to both languages
with the same {fields}. The Chinese texts keep the course's style (Chinese with the English term beside it).

lecture2.checks, lecture2.exercises and lecture2's instruments build their messages in Chinese (f-strings, the English
term beside it); `localize` gives the English edition their English from a fragment catalogue keyed by the Chinese
source text (gettext's model: the msgid is the source string). Every string constant of lecture2's code that holds
Chinese (for an f-string, each of its constant parts, as `ast` gives them) is a key (`chinese_fragments` lists a
module's); its value is the English of that fragment, written so that the fragments and the f-string's {fields}, in
the Chinese order, read as an English sentence:

    lecture2.checks_en.FRAGMENTS_EN   lecture2.checks and lecture2.exercises.*
    lecture2.errors_en.FRAGMENTS_EN   every other module of lecture2 (the instruments' refusals)

Not keys: docstrings, comments, the hints (lecture2.hints_en translates them), this module's, hints_en's and the
catalogues' own text. tests/test_messages.py holds every fragment of every module to a key, and every key to the
code. The lab shows a failed check, and an error raised from lecture2's code, through `localize` (lecture2.lab).
"""
from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

MESSAGES: dict[str, dict[str, str]] = {
    # lecture2.predict: a prediction beside its measurement
    "predict.not_yet": {
        "zh": "（还没有预测 (no prediction yet)：在上面的预测单元格里写下你的数，再运行这两个单元格）",
        "en": "(no prediction yet: write your number in the prediction cell above, then run both cells again)"},
    "predict.measured_only": {"zh": "{label}测量 (measured) {measured} {not_yet}",
                              "en": "{label}measured {measured} {not_yet}"},
    "predict.ratio": {"zh": "{label}预测 (predicted) {predicted} · 测量 (measured) {measured} · 测量/预测 (ratio) {ratio}",
                      "en": "{label}predicted {predicted} · measured {measured} · measured/predicted {ratio}"},
    "predict.choice": {"zh": "{label}预测 (predicted) {predicted} · 测量 (measured) {measured} · {right}",
                       "en": "{label}predicted {predicted} · measured {measured} · {right}"},
    "predict.right": {"zh": "✓ 对了 (right)", "en": "✓ right"},
    "predict.wrong": {"zh": "✗ 不对 (not right)", "en": "✗ not right"},
    # the fixed words of a check's message (lecture2.checks, the feedback's lines)
    "check.expected": {"zh": "期望 (expected)", "en": "expected"},
    "check.got": {"zh": "得到 (got)", "en": "got"},
    "check.hint": {"zh": "提示 (hint)", "en": "hint"},
    "check.ratio": {"zh": "比值 ratio got/expected", "en": "ratio got/expected"},
    "check.difference": {"zh": "差 difference", "en": "difference"},
    "check.passed": {"zh": "✅ {name}: 检查通过 (all checks passed)", "en": "✅ {name}: all checks passed"},
    "check.not_implemented": {"zh": "⏳ 练习 {name} 还没有完成 (not implemented yet)：填写上面的函数后再运行这个检查。",
                              "en": "⏳ exercise {name} not implemented yet: fill in the function above, then run "
                                    "this check again."},
    # `python -m lecture2 estimate`'s refusals (lecture2.cli_estimate), in the edition of the lab it runs beside
    "cli.error": {"zh": "{prog}: 错误 (error): {message}\n  例如 (for example): {prog} ... {example}\n"
                        "  全部选项 (all options): {prog} --help\n",
                  "en": "{prog}: error: {message}\n  for example: {prog} ... {example}\n  all options: {prog} --help\n"},
    "cli.number": {"zh": "{what} 应是一个数 (must be a number), got {text}", "en": "{what} must be a number, got {text}"},
    "cli.finite": {"zh": "{what} 应是有限的数 (must be finite), got {text}", "en": "{what} must be finite, got {text}"},
    "cli.whole": {"zh": "{what} 应是整数 (must be a whole number), got {text}",
                  "en": "{what} must be a whole number, got {text}"},
    "cli.bound": {"zh": "{what} 应 {bound} ({what} must be {bound}), got {text}", "en": "{what} must be {bound}, got {text}"},
    "cli.fraction": {"zh": "{what} 是峰值的比例 (is a fraction of peak and must be in (0, 1]), got {text}",
                     "en": "{what} is a fraction of peak and must be in (0, 1], got {text}"},
    "cli.unknown_gpu": {"zh": "未知的 GPU (unknown GPU {text}); known GPUs: {known}",
                        "en": "unknown GPU {text}; known GPUs: {known}"},
    "cli.unknown_model": {"zh": "未知的模型 (unknown model {text}); known models: {known}; or --config config.json",
                          "en": "unknown model {text}; known models: {known}; or --config config.json"},
    "cli.unknown_cluster": {"zh": "未知的集群 (unknown cluster {text}); known clusters: {known}",
                            "en": "unknown cluster {text}; known clusters: {known}"},
    "cli.shape_missing": {"zh": "a shape by flags needs {missing} too (用标志给出形状时还缺这些)",
                          "en": "a shape by flags needs {missing} too"},
    "cli.no_cluster": {"zh": "no cluster row has the GPU {gpu} (没有这种 GPU 的集群); pass --cluster ({known})",
                       "en": "no cluster row has the GPU {gpu}; pass --cluster ({known})"},
    "cli.batch_both": {"zh": "give --global-batch (sequences) or --batch-tokens (tokens), not both (二者选一)",
                       "en": "give --global-batch (sequences) or --batch-tokens (tokens), not both"},
    "cli.batch_whole": {"zh": "--batch-tokens ({tokens}) 应是 --seq ({seq}) 的整数倍 (must be a whole number of "
                              "sequences: e.g. {example})",
                        "en": "--batch-tokens ({tokens}) must be a whole number of --seq ({seq}) sequences: e.g. "
                              "{example}"},
    "cli.layout": {"zh": "{message} (布局不成立: this layout cannot exist)", "en": "{message} (this layout cannot exist)"},
    "cli.gpu_cluster": {"zh": "--gpu {gpu} 和 --cluster {cluster} 不一致 (disagree): its nodes hold {holds}; drop --gpu, "
                              "or pass --cluster with a row of {gpu} ({rows})",
                        "en": "--gpu {gpu} and --cluster {cluster} disagree: its nodes hold {holds}; drop --gpu, or "
                              "pass --cluster with a row of {gpu} ({rows})"},
    "cli.params": {"zh": "the following arguments are required: --params (or --model, --config, --layers ...) "
                         "(需要模型的大小)",
                   "en": "the following arguments are required: --params (or --model, --config, --layers ...)"},
    "cli.search": {"zh": "--search needs --model, --config or shape flags (a shape to lay out; 需要模型的形状)",
                   "en": "--search needs --model, --config or shape flags (a shape to lay out)"},
    "cli.none_fits": {"zh": "No layout of {name} fits on {gpus} GPUs with this batch (没有放得下的布局).",
                      "en": "No layout of {name} fits on {gpus} GPUs with this batch."},
}

# Fixed words of lecture2's messages (built in Chinese) and their English, applied in order by `localize` after the
# fragment catalogues, as a fallback: for Chinese no catalogue holds (the punctuation, mostly). A message's own values
# (what came back, the expected value) are never touched, since they are written in code and numbers.
WORDS_EN: tuple[tuple[str, str], ...] = (
    (r"\n?提示 \(hint\): ", "\nhint: "),
    (r"期望 \(expected\) ", "expected "),
    (r"，得到 \(got\) ", ", got "),
    (r"得到 \(got\) ", "got "),
    (r"比值 ratio got/expected", "ratio got/expected"),
    (r"差 difference got − expected", "difference got − expected"),
    (r" 出错 \(raised\) ", " raised "),
    (r"应返回一个数 \(a real number: int or float\)，得到 ", "should return a real number (int or float), got "),
    (r"应返回一个数 \(a number\)，得到 ", "should return a number, got "),
    (r"应返回 Python 内置类型 \(built-in types: int, float, str, list, tuple, dict\) 或 torch\.Tensor 组成的值，得到 ",
     "should return a value made of Python's built-in types (int, float, str, list, tuple, dict) or torch.Tensor, "
     "got "),
    (r"用 int\(\.\.\.\) / float\(\.\.\.\) / \.item\(\) / \.tolist\(\) 转换", "convert with int(...) / float(...) / "
                                                                          ".item() / .tolist()"),
    (r"应返回 ", "should return "),
    (r"应有键 \(keys\) ", "should have the keys "),
    (r"应该 raise ValueError", "should raise ValueError"),
    (r"没有得到结果 \(no observation came back\)", "no observation came back"),
    (r"你的函数调用了课程的计算器 \(lecture2\.estimate 等\)", "your function called the course's calculator "
                                                           "(lecture2.estimate, ...)"),
    (r"\(检查得到的不是 True/False，而是 (\w+)：返回值的类型不对\)", r"(the check got \1, not True/False: the returned "
                                                                r"value has the wrong type)"),
    (r"练习 (\S+) 还没有完成 \(not implemented yet\)", r"exercise \1 not implemented yet"),
    (r"多算了 (\d+) 次 ([^、？]+)", r"count \2 \1 times too many"),
    (r"漏算了 (\d+) 次 ([^、？]+)", r"leave out \2 \1 times"),
    (r"多算了 ([^、？]+)", r"count \1 once too many"),
    (r"漏算了 ([^、？]+)", r"leave out \1"),
    (r"：是不是", ": did you "),
    (r" 或 ", " or "),
    (r"、", ", "),
    (r"，", ", "),
    (r"；", "; "),
    (r"：", ": "),
    (r"？", "?"),
    (r"。(?=\S)", ". "),
    (r"。", "."),
    (r"（", " ("),
    (r"）", ")"),
)
_WORDS = tuple((re.compile(zh), en) for zh, en in WORDS_EN)


def say(key: str, lang: str, **fields: object) -> str:
    """Message `key` in `lang` (a KeyError names a key or language the catalogue lacks: a bug of the course)."""
    return MESSAGES[key][lang].format(**fields)


def hint(key: str, lang: str) -> str:
    """The hint of usual mistake `key` in `lang`; in English the Chinese text where no English is written yet."""
    from .hints import HINTS

    if lang == "en":
        from .hints_en import HINTS_EN

        if key in HINTS_EN:
            return HINTS_EN[key]
    return HINTS[key]


# Chinese (CJK ideographs, fullwidth forms, CJK punctuation): what a string constant must hold to be a key, and what no
# English value may hold.
CHINESE = re.compile(r"[\u3400-\u9fff\uff00-\uffef\u3000-\u303f]")
PACKAGE = Path(__file__).resolve().parent
# lecture2's modules whose text is not a fragment: the catalogues themselves, the hints' English, this module
NOT_FRAGMENTS = ("messages.py", "hints_en.py", "checks_en.py", "errors_en.py")


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                found.add(id(first.value))
    return found


def _hint_texts() -> set[str]:
    """Every registered hint's text (lecture2.checks.HINTS, with the hints each exercise module registers)."""
    import importlib
    import pkgutil

    from .hints import HINTS

    exercises = f"{__package__}.exercises"
    for module in pkgutil.iter_modules([str(PACKAGE / "exercises")]):  # each registers its hints as it is imported
        importlib.import_module(f"{exercises}.{module.name}")
    return set(HINTS.values())


def chinese_fragments(path: str | Path, hints: set[str] | None = None) -> list[str]:
    """The catalogue keys of one module of lecture2, in the order of the source: each string constant that holds
    Chinese (an f-string's constant parts, exactly as `ast` gives them), once; not its docstrings, nor the registered
    hints' texts (`hints`; by default every hint of lecture2.checks.HINTS, whose English is lecture2.hints_en)."""
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    hints = _hint_texts() if hints is None else hints
    docstrings = _docstrings(tree)
    found: dict[str, None] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings \
                and node.value not in hints and CHINESE.search(node.value):
            found.setdefault(node.value)
    return list(found)


def catalogued_modules() -> dict[str, list[Path]]:
    """lecture2's modules whose fragments each catalogue holds: {"checks_en": checks/*.py and exercises/*.py,
    "errors_en": every other module (recursively)}; the modules that are not fragments are left out."""
    checks_side = [*sorted((PACKAGE / "checks").glob("*.py")), *sorted((PACKAGE / "exercises").glob("*.py"))]
    others = [p for p in sorted(PACKAGE.rglob("*.py")) if p not in checks_side and p.name not in NOT_FRAGMENTS
              and "__pycache__" not in p.parts]
    return {"checks_en": checks_side, "errors_en": others}


def catalogue(name: str) -> dict[str, str]:
    """FRAGMENTS_EN of lecture2.checks_en or lecture2.errors_en ({} for one not written yet)."""
    import importlib

    try:
        return dict(importlib.import_module(f"{__package__}.{name}").FRAGMENTS_EN)
    except ModuleNotFoundError as err:
        if err.name != f"{__package__}.{name}":
            raise
        return {}


# An English ending in punctuation, where the Chinese went on without a space ("。(", "？x"): a space after it
_GLUED = re.compile(r"[.,;:?!]$")


@functools.lru_cache(maxsize=1)
def _fragments_en() -> tuple[tuple[str, str, re.Pattern | None], ...]:
    """Both catalogues merged (lecture2.checks_en's English where both hold a key), longest key first: (key, English,
    the pattern of the key followed by a character that needs a space after the English's punctuation, or None)."""
    merged = {**catalogue("errors_en"), **catalogue("checks_en")}
    return tuple((zh, en, re.compile(re.escape(zh) + r"(?=[^\s)\]}'\"’”])") if _GLUED.search(en) else None)
                 for zh, en in sorted(merged.items(), key=lambda item: (-len(item[0]), item[0])))


def localize(message: str, lang: str, hint_key: str | None = None) -> str:
    """`message`, built by lecture2 in Chinese (a check's, an instrument's error), in `lang` (in Chinese: as it is).
    In English: its hint (found by `hint_key`, or by its text, where the message carries a registered one), then every
    fragment of the catalogues found in it, longest first, then the fixed words of WORDS_EN (the punctuation) where
    any Chinese is left. The values a message shows (what came back, the expected value) are code and numbers."""
    if lang != "en" or not message:
        return message
    from .hints import HINTS

    keys = [hint_key] if hint_key and hint_key in HINTS else []
    keys += [k for k, text in HINTS.items() if text in message and k not in keys]
    for key in keys:
        message = message.replace(HINTS[key], hint(key, "en"))
    if not CHINESE.search(message):
        return message
    for zh, en, glued in _fragments_en():
        if zh in message:
            if glued is not None:
                message = glued.sub(lambda _, en=en: en + " ", message)
            message = message.replace(zh, en)
    for pattern, english in _WORDS:
        message = pattern.sub(english, message)
    return message
