#!/bin/bash
# Shared by scripts/gpu/*.sh (issue 67's queue; README.md beside this file). Sourced, not run.
#
# On the device (from the repository root, $OUT set by the device tool): python3 is the image's
# (torch with CUDA), the work folder /root/gpu-work keeps REPRO_CACHE and the installed wheels
# for the session's later calls (the machine stays warm 30 s after a call).
# Here: TOY=1 runs an item's same code path on the CPU — the kernel benchmark at toy sizes, each
# pytest of a claims item recorded as its argument list in $OUT/argv.txt instead of run (DRY),
# checked by tests/test_gpu_queue.py; PY defaults to .venv/bin/python there.
set -u
OUT=${OUT:?set OUT to the folder that comes back}
mkdir -p "$OUT"
if [ -n "${TOY:-}" ]; then
  PY=${PY:-.venv/bin/python}; DEV=${DEV:-cpu}; W=${W:-$(mktemp -d)}; DRY=${DRY:-1}
else
  PY=${PY:-python3}; DEV=${DEV:-cuda}; W=${W:-/root/gpu-work}; DRY=${DRY:-}
fi
mkdir -p "$W"
export REPRO_CACHE=${REPRO_CACHE:-$W/rc} STASH=${STASH:-/root/gpu-stash} MPLBACKEND=Agg PYTHONUNBUFFERED=1 \
  HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
[ -d "$W/site" ] && export PYTHONPATH="$W/site${PYTHONPATH:+:$PYTHONPATH}"
T0=$(date +%s)

gpu_device_txt() {  # the machine, the packages, the commit → $OUT/device.txt (DRY: the commit only)
  if [ -n "$DRY" ]; then git log --oneline -1 > "$OUT/device.txt" 2>&1; return 0; fi
  {
    nvidia-smi -L 2>&1 | head -n 2
    $PY -c "import sys, torch; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.cuda.is_available())" 2>&1
    $PY -c "import transformers; print('transformers', transformers.__version__)" 2>&1 | tail -n 1
    lscpu 2>/dev/null | grep -E 'Model name|^CPU\(s\)'
    git log --oneline -1 2>&1; git status --short 2>&1 | head -n 5
    echo "setup $(( $(date +%s) - T0 )) s"
  } > "$OUT/device.txt"
}

gpu_payloads() {  # CALL_DIR: stash its parts, assemble its item's payloads, install the wheels
  local c=$1
  $PY scripts/gpu/gpu_queue.py stash "$c" --stash "$STASH" || return 3
  $PY scripts/gpu/gpu_queue.py assemble "$c" --stash "$STASH" --cache "$REPRO_CACHE" --wheels "$W/whl" || return 3
  if ls "$W"/whl/*.whl > /dev/null 2>&1 && [ ! -d "$W/site" ]; then
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$W/site" "$W"/whl/*.whl 2>&1 | tail -n 2
    export PYTHONPATH="$W/site${PYTHONPATH:+:$PYTHONPATH}"
  fi
}

gpu_claims() {  # NAME LIMIT pytest-arguments…: one pytest under `timeout -s INT` (a stopped run
  # still writes claims.partial.json); its claims.json, report.md and log into $OUT as NAME_*
  local name=$1 limit=$2; shift 2
  local args=(-m pytest -p no:cacheprovider -p no:xdist -q -rfEs --durations=0 "$@" --device "$DEV" --baseline off
              --artifacts "$W/art_$name")
  if [ -n "$DRY" ]; then
    echo "$name $limit ${args[*]}" >> "$OUT/argv.txt"
    return 0
  fi
  local s; s=$(date +%s)
  timeout -s INT -k 20 "$limit" $PY "${args[@]}" > "$OUT/${name}.log" 2>&1
  echo "rc=$? wall $(( $(date +%s) - s )) s" >> "$OUT/${name}.log"
  local f
  for f in claims.json claims.partial.json report.md; do
    [ -f "$W/art_$name/$f" ] && cp "$W/art_$name/$f" "$OUT/${name}_$f"
  done
  tail -n 4 "$OUT/${name}.log"
}

gpu_repro() {  # NAME LIMIT repro-arguments…: one `repro` command (e.g. sk2-seed) under `timeout -s INT`,
  # its output into $OUT/NAME.log; DRY: recorded in $OUT/repro_argv.txt (tests/test_gpu_queue.py)
  local name=$1 limit=$2; shift 2
  if [ -n "$DRY" ]; then
    echo "$name $limit $* --device $DEV" >> "$OUT/repro_argv.txt"
    return 0
  fi
  local s rc; s=$(date +%s)
  timeout -s INT -k 20 "$limit" $PY -m repro.harness.cli "$@" --device "$DEV" > "$OUT/${name}.log" 2>&1
  rc=$?
  echo "rc=$rc wall $(( $(date +%s) - s )) s" >> "$OUT/${name}.log"
  tail -n 6 "$OUT/${name}.log"
  return $rc
}

gpu_done() { echo "total $(( $(date +%s) - T0 )) s" >> "$OUT/device.txt"; }
