#!/bin/bash
# Queue item 1: scripts/gpu/kernel_bench.py (its docstring) → $OUT/kernel_bench.json, report.md.
# Needs no payload: the device image's torch and Triton. TOY=1: the CPU toy sizes.
source "$(dirname "$0")/lib.sh"
gpu_device_txt
if [ -n "${TOY:-}" ]; then ARGS=(--toy --device cpu --S 16 --dtypes float32 --kernels dense,jagged --reps 1); else ARGS=(); fi
timeout -s INT -k 20 "${LIMIT:-500}" $PY scripts/gpu/kernel_bench.py --out "$OUT" --deadline-s "${DEADLINE:-420}" "${ARGS[@]}" \
  > "$OUT/kernel_bench.log" 2>&1
echo "rc=$?" >> "$OUT/kernel_bench.log"
tail -n 30 "$OUT/report.md" 2>/dev/null || tail -n 20 "$OUT/kernel_bench.log"
gpu_done
