"""Notebook 11's check cases for the pipeline schedule: pipeline_schedule(p, m, v, stage).

The answer returns {"bubble": the idle share of the pipeline's time, "in_flight": how many micro-batches' worth of the
stage's activations it holds at its peak} for Megatron's 1F1B (v = 1) and interleaved 1F1B (v virtual stages per
GPU) with p stages and m micro-batches.

Every answer is reached through lecture2.answers (plain data both ways), with lecture2's calculator and engines
switched off beside it (the planner already holds these formulas). Expected values come from the judge:

    simulated      lecture2.planning.schedule.simulate runs Megatron's order of forward and backward chunks on p
                   stages (forward 1, backward 2 time units per chunk) and measures the first stage's idle share and
                   each stage's peak of chunks kept for backward: an instrument that executes the schedule, not the
                   closed form the exercise asks for
    the lecture    PipeDream-flush's (p - 1)/(m + p - 1) and Korthikanti et al. 2022's in-flight counts, written in
                   the test cell with their sources
    drawn          the closed form written in the test cell's hidden region, on drawn p, m, v and stage
"""
from __future__ import annotations

from lecture2 import answers, checks

INSTRUMENTS = answers.CALCULATOR + answers.ENGINE_MODULES
KEYS = ("bubble", "in_flight")

# Each hint goes from the idea to the formula: what the mistake misses first, the count last.
checks.register_hints({
    "pipeline.instrument_off": "这个练习要你自己推出公式：检查调用你的函数时，课程的计算器 (lecture2.planner、planning、"
                               "estimate ...) 被关掉了，调用它们会出错。",
    "pipeline.bubble_over_compute": "bubble 要的是空闲占整个流水线时间的比例，分母是整条流水线的时间片 (计算的 + 空着的)，"
                                    "不只是计算的那些：(p−1)/(v·m + p − 1)，不是 (p−1)/(v·m) (后者是 Narayanan et al. 2021 "
                                    "的 bubble time fraction，相对于计算时间)。",
    "pipeline.bubble_no_v": "interleaving 之后一个时间片是一个 chunk (1/v 个 micro-batch 的计算)：计算的时间片变成 v·m 个，"
                            "空着的仍是 p − 1 个，所以空闲比例是 (p−1)/(v·m + p − 1)，不是 (p−1)/(m + p − 1)。",
    "pipeline.bubble_units": "分子和分母要用同一种时间片来数：interleaving 后一个时间片是一个 chunk，bubble 是 p − 1 个 chunk "
                             "时间片，整个流水线是 v·m + p − 1 个。",
    "pipeline.in_flight_plain": "interleaved 1F1B 的 warm-up 更长：第一个反向之前，stage s 先做 Megatron 的 "
                                "2(p−s−1) + (v−1)·p 个 chunk 的前向，再加正在算的 1 个；不是 1F1B 的 p − s 个 micro-batch。",
    "pipeline.in_flight_uncapped": "一个 stage 的激活值不会比它所有的 micro-batch 还多：warm-up 比 m 个 micro-batch (v·m 个 "
                                   "chunk) 还长时，所有前向都在第一个反向之前做完，要取 min(..., v·m) 个 chunk。",
    "pipeline.in_flight_chunks": "每个 chunk 只有这个 stage 的 1/v 层：在途的 chunk 数要除以 v，才是多少个 micro-batch "
                                 "的（整个 stage 的）激活值。",
    "pipeline.stage_from_one": "stage 从 0 数起：第一个 stage 是 0，它 warm-up 最长、存的最多（1F1B 下 min(p, m) 个 micro-batch）。",
    "pipeline.interleaved_at_v1": "v = 1 就是普通的 1F1B：warm-up 是 p − s − 1 个 micro-batch，加上正在算的 1 个，在途 "
                                  "min(p − s, m) 个；interleaved 的 2(p − s − 1) 只在 v > 1 时成立。",
})


def _answer(fn, *args, what: str):
    """fn(*args) beside the answer, the instruments off; an answer that called one of them draws its hint."""
    __tracebackhide__ = True
    return checks.with_instruments_off(fn, *args, instruments=INSTRUMENTS, what=what, hint_key="pipeline.instrument_off")


def schedule_case(fn, p: int, m: int, v: int, stage: int, bubble: float, in_flight: float,
                  what: str | None = None) -> None:
    """fn(p, m, v, stage) against the expected idle share `bubble` and `in_flight` micro-batches' worth (rtol 1e-9):
    a dict with exactly these two keys, each a float (or an int for in_flight)."""
    __tracebackhide__ = True
    what = what or f"pipeline_schedule(p={p}, m={m}, v={v}, stage={stage})"
    got = _answer(fn, p, m, v, stage, what=what)
    checks.expect_type(got, dict, what=what)
    checks.expect(set(got) == set(KEYS), f"{what}: 应返回 {{'bubble', 'in_flight'}} 两个键 (two keys), 得到 {sorted(got)}")
    wrong_bubble = [checks.mistake("pipeline.bubble_over_compute", (p - 1) / (v * m)),
                    checks.mistake("pipeline.bubble_units", (p - 1) / v / (m + p - 1))]
    if v > 1:
        wrong_bubble.append(checks.mistake("pipeline.bubble_no_v", (p - 1) / (m + p - 1)))
    checks.expect_close(got["bubble"], bubble, rtol=1e-9, atol=1e-12, what=f"{what}['bubble']", mistakes=wrong_bubble)
    plain = min(p - stage, m)
    wrong_flight = [checks.mistake("pipeline.stage_from_one", min(p - stage + 1, m) if v == 1 else
                                   min(2 * (p - stage) + (v - 1) * p + 1, v * m) / v)]
    if v > 1:
        uncapped = 2 * (p - stage - 1) + (v - 1) * p + 1
        wrong_flight += [checks.mistake("pipeline.in_flight_plain", plain),
                         checks.mistake("pipeline.in_flight_uncapped", uncapped / v),
                         checks.mistake("pipeline.in_flight_chunks", min(uncapped, v * m))]
    else:
        wrong_flight += [checks.mistake("pipeline.interleaved_at_v1", min(2 * (p - stage - 1) + 1, m)),
                         checks.mistake("pipeline.in_flight_uncapped", p - stage)]
    checks.expect_close(got["in_flight"], in_flight, rtol=1e-9, atol=1e-12, what=f"{what}['in_flight']",
                        mistakes=wrong_flight)
    checks.expect_type(got["bubble"], float, what=f"{what}['bubble']")


def simulated_case(fn, p: int, m: int, v: int) -> None:
    """Every stage of Megatron's schedule with p stages, m micro-batches, v virtual stages, simulated in the judge
    (lecture2.planning.schedule.simulate): fn against the measured idle share and peak chunks in flight / v."""
    __tracebackhide__ = True
    from lecture2.planning import schedule

    sim = schedule.simulate(p, m, v)
    for stage in range(p):
        schedule_case(fn, p, m, v, stage, sim.bubble, sim.peak_in_flight[stage] / v,
                      what=f"pipeline_schedule(p={p}, m={m}, v={v}, stage={stage})  vs the schedule simulated "
                           f"(idle {sim.bubble:.4f}, peak {sim.peak_in_flight[stage]} chunks)")


def rejects(fn, *args) -> None:
    """fn(*args) with m not a multiple of p under interleaving (Megatron refuses it) must raise ValueError."""
    __tracebackhide__ = True
    try:
        _answer(fn, *args, what=f"pipeline_schedule{args}")
    except ValueError:
        return
    checks.fail(f"pipeline_schedule{args} 应该 raise ValueError: interleaving 需要 m 是 p 的倍数 (Megatron)",
                "raises_value_error")


# How each exercise is graded (docs/grading.md's table is generated from every module's ORACLE).
ORACLE = {
    "pipeline_schedule": answers.Oracle(
        returns="the dict {bubble, in_flight} of floats it returns, called beside the answer with lecture2's "
                "calculator switched off there",
        expected="Megatron's schedule run as a discrete-event simulation in the judge (lecture2.planning.schedule."
                 "simulate: the first stage's idle share and each stage's peak chunks kept for backward); "
                 "PipeDream-flush's (p−1)/(m+p−1) and Korthikanti et al.'s in-flight counts with sources; the closed "
                 "form for drawn p, m, v and stage",
        tampering="only the returned numbers are graded; the switch-off of the calculator happens in the student's "
                  "process, so an answer that restores it there gets the planner's numbers, which equal the formula "
                  "asked for"),
}
