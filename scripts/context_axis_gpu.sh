#!/bin/bash
# (Issue 67's queue runs the kernel figures as scripts/gpu/kernel_bench.sh, one process; see scripts/gpu/README.md.)
# The context axis at GPU speed, one device call (≤ 8 minutes): the CUDA half of
# tests/test_context_axis_gpu_kernel.py (exactness, forward and backward), then the one-launch
# cases of benchmarks/test_context_axis_kernels.py on CUDA (bf16: flex, dense, jagged, the
# jagged-SDPA anchor, a padded dense SDPA, S = 2048 first; then float32; last, flex autotuned),
# then scripts/context_axis_gpu_report.py: the table in $OUT/README.md and
# $OUT/context_axis_gpu.json. Each part under `timeout -s INT`, so a
# part stopped by its limit still leaves what it measured (the benchmark writes a line per case).
#
#   on the GPU machine, from the repository root:  bash scripts/context_axis_gpu.sh
#   here, without a GPU (the CPU cases, timings off):  SMOKE=1 OUT=/tmp/ca-gpu bash scripts/context_axis_gpu.sh
#   the CPU cases timed (S = 128, 256, forward; minutes):  DEV=cpu OUT=/tmp/ca-cpu bash scripts/context_axis_gpu.sh
#
# Packages: the machine's own (torch with CUDA and Triton, pytest, pytest-benchmark, hypothesis,
# transformers); wheels carried in .whl/ are installed first, as in results/h200-2026-11-26c/.
# $OUT gets at most 8 files (the device tool's limit); commit them as results/<device>-<date>/.
set -u
OUT=${OUT:?set OUT to the folder that comes back}
PY=${PY:-python3}
# the parts' limits (s), 430 in all: inside an 8-minute call with the start-up and the report.
# Most of each part is flex's builds (≈ 11 in the tests, 2 per S and dtype in the benchmark)
EXACT_S=${EXACT_S:-150}
BENCH_S=${BENCH_S:-280}
W=$(mktemp -d)
mkdir -p "$OUT"
t0=$(date +%s)
if [ -d .whl ] && ls .whl/*.whl > /dev/null 2>&1; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$W/site" .whl/*.whl 2>&1 | tail -n 2
  export PYTHONPATH="$W/site"
fi
export PYTHONPATH=".${PYTHONPATH:+:$PYTHONPATH}" REPRO_CACHE="$W/cache" MPLBACKEND=Agg PYTHONUNBUFFERED=1 \
  HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
if [ -n "${SMOKE:-}" ]; then DEV=${DEV:-cpu}; BENCH=(--benchmark-disable); else DEV=${DEV:-cuda}; BENCH=(--benchmark-json="$OUT/bench.json"); fi
{
  nvidia-smi -L 2>&1 | head -n 2
  $PY -c "import sys, torch, transformers; print('python', sys.version.split()[0], 'torch', torch.__version__, 'transformers', transformers.__version__, 'cuda', torch.cuda.is_available(), torch.cuda.get_device_name() if torch.cuda.is_available() else '')"
  $PY -c "import triton; print('triton', triton.__version__)" 2>&1 | tail -n 1
  git log --oneline -1 2>&1; git status --short 2>&1 | head -n 5
} > "$OUT/device.txt"

part() {  # name, limit, pytest arguments...
  local name=$1 limit=$2; shift 2
  local s; s=$(date +%s)
  timeout -s INT -k 20 "$limit" $PY -m pytest -p no:xdist -p no:cacheprovider -q -rfEs "$@" > "$OUT/$name.log" 2>&1
  echo "rc=$? wall $(( $(date +%s) - s )) s" >> "$OUT/$name.log"
  tail -n 3 "$OUT/$name.log"
}
part exact "$EXACT_S" tests/test_context_axis_gpu_kernel.py -k "$DEV" --junitxml="$W/exact.xml"
part bench "$BENCH_S" benchmarks/test_context_axis_kernels.py -k "one_launch and $DEV" "${BENCH[@]}"
ROWS=artifacts/benchmarks/context_axis_one_launch.jsonl
cp "$ROWS" "$OUT/cases.jsonl" 2>/dev/null
$PY scripts/context_axis_gpu_report.py "$ROWS" --exact "$W/exact.xml" --device "$OUT/device.txt" --out "$OUT" > "$W/report.log" 2>&1 \
  || tail -n 5 "$W/report.log"
echo "total $(( $(date +%s) - t0 )) s" >> "$OUT/device.txt"
tail -n 40 "$OUT/README.md" 2>/dev/null
