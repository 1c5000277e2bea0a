#!/usr/bin/env bash
# The course's checks that need a GPU, as one prepared run (for the device tool's H200, or any CUDA machine):
#   first, the MFU ladder of notebook 08 (`python -m lecture2 profile --ladder-only`, a few minutes: it compiles):
#      the course's GPT from fp32 with explicit attention to bf16, SDPA, torch.compile, fused AdamW and a larger
#      batch, merged into lecture2/profiles/$name.json (models.ladder, made.ladder); the benchmark goal is the top
#      rung at least 45% MFU on an H200;
#   0. then, in about a minute: the transformer GEMM shapes the planner's efficiency curve is fitted to
#      (`python -m lecture2 profile --gemm-only`), merged into lecture2/profiles/$name.json (gemm_shapes) so that a
#      session that runs out of time still brings them back;
#   1. `python -m lecture2 env` and the GPU profile (`python -m lecture2 profile`, which measures them again),
#      copied into lecture2/profiles/ of this copy so that the next steps show it;
#   2. the gpu-marked tests (no Jupyter needed: --noconftest);
#   3. every solution notebook, every code cell, on CUDA (tools/run_cells.py: no Jupyter needed).
# Notebook 06 needs bitsandbytes (8-bit Adam), which a bare GPU machine lacks and cannot download: put its wheel in
# .gpu-wheels/ first (`pip download --no-deps bitsandbytes==0.50.2 -d .gpu-wheels`, 43 MB) and carry that folder;
# it is installed into a private folder on PYTHONPATH, with nothing else changed.
# Everything it prints also goes to ${OUT:-gpu-out}/ (ladder.json, ladder.txt, gemm_shapes.json, env.txt, profile.txt,
# h200.json, pytest.txt, notebooks.txt).
# Each step has its own time limit, so a hang in one still leaves the others' results. STEPS chooses them (default
# "ladder gemm env profile tests notebooks"; a lease short of time can leave out "profile", which measures the
# shipped profile's numbers again, the ladder included).
#
#   on the GPU:  bash tools/gpu_checks.sh            (torch and pytest suffice; ALLOW_CPU=1 rehearses it on a CPU)
#   then here:   cp <files_at>/h200.json lecture2/profiles/h200.json && commit it: the notebooks' reference
#                sections show it from then on (their cells are nbval-ignore-output: nothing to re-execute).
#                If the full profile did not finish (or STEPS left it out), cp <files_at>/h200.parts.json
#                lecture2/profiles/h200.json keeps the shipped profile with the ladder and the GEMM shapes added
#                (made.ladder and made.gemm_shapes say when); then rerun tests/test_planner.py and
#                tests/test_conformance.py (the fit takes the shapes in), re-execute notebook 10
#                (tools/execute_notebooks.py: it prints plans) and update docs/planning.md's tables from
#                `python -m tools.bench_planner`; re-execute notebook 08 if its cells should show the new ladder.
set -u
out=${OUT:-gpu-out}
name=${PROFILE_NAME:-h200}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 MPLBACKEND=Agg PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
py=${PYTHON:-python3}
status=0
steps=" ${STEPS:-ladder gemm env profile tests notebooks} "
want() { [[ "$steps" == *" $1 "* ]]; }
if ls .gpu-wheels/*.whl >/dev/null 2>&1; then
  "$py" -m pip install --quiet --no-deps --no-index --target /tmp/gpu-site .gpu-wheels/*.whl \
    && export PYTHONPATH="$PYTHONPATH:/tmp/gpu-site"
fi

"$py" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" || [ "${ALLOW_CPU:-0}" = 1 ] \
  || { echo "no CUDA device: nothing to check here (ALLOW_CPU=1 to rehearse on a CPU)"; exit 1; }

if want ladder; then
  echo "== the MFU ladder (notebook 08; the goal: the top rung at least 45% MFU on an H200)"
  timeout 420 "$py" -m lecture2 profile --ladder-only --out "$out/ladder.json" 2>&1 | tee "$out/ladder.txt"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi
if want gemm; then
  echo "== transformer GEMM shapes (the planner's efficiency by shape)"
  timeout 240 "$py" -m lecture2 profile --gemm-only --out "$out/gemm_shapes.json" 2>&1 | tee "$out/gemm.txt"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi
if [ -s "lecture2/profiles/$name.json" ] && { [ -s "$out/gemm_shapes.json" ] || [ -s "$out/ladder.json" ]; }; then
  "$py" - "lecture2/profiles/$name.json" "$out/gemm_shapes.json" "$out/ladder.json" "$out/$name.parts.json" <<'PY'
import json, os, sys
shipped, sweep, ladder, merged = sys.argv[1:]
profile = json.load(open(shipped))
have = lambda path: os.path.exists(path) and os.path.getsize(path) > 0
if have(sweep):
    measured = json.load(open(sweep))
    profile["gemm_shapes"] = measured["gemm_shapes"]
    profile["made"]["gemm_shapes"] = dict(measured["made"], torch=measured["device"]["torch"])  # when, how, with what
if have(ladder):
    measured = json.load(open(ladder))
    profile["models"]["ladder"] = measured["models"]["ladder"]  # it names the GPT it measured (ladder.gpt)
    profile["config"]["ladder"] = measured["config"].get("ladder")
    profile["made"]["ladder"] = dict(measured["made"], torch=measured["device"]["torch"])
open(merged, "w").write(json.dumps(profile, indent=1) + "\n")
PY
fi

want env && echo "== env" && timeout 120 "$py" -m lecture2 env 2>&1 | tee "$out/env.txt"

if want profile; then
  echo "== profile"
  timeout 600 "$py" -m lecture2 profile --out "$out/$name.json" 2>&1 | tee "$out/profile.txt"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi
[ -s "$out/$name.json" ] && cp "$out/$name.json" "lecture2/profiles/$name.json"

if want tests; then
  echo "== gpu tests"
  timeout 180 "$py" -m pytest -q -rs --noconftest -p no:cacheprovider -p no:nbval -o addopts="" -m gpu \
    tests/test_hardware.py tests/test_measure.py tests/test_profile.py tests/test_reference.py 2>&1 \
    | tee "$out/pytest.txt"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi

if want notebooks; then
  echo "== notebooks on CUDA"
  # 10 minutes: notebook 08 compiles its MFU ladder on CUDA (minutes)
  timeout 600 "$py" tools/run_cells.py solutions/lec02/*.ipynb 2>&1 | tee "$out/notebooks.txt"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi
exit $status
