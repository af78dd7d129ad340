#!/bin/bash
# one device call (2026-11-26, third H200 session): the two paper re-runs the earlier sessions owed,
# side by side on the one GPU — D: SK-1 (Σ A² per head since dcffd51), E: BB-1.2 (size direction
# fixed in dcffd51); then, once both are done, F: BB-2.2 (100 random models) and BB-3 / BB-3.2a in the
# time left before DEADLINE s. Each pytest under `timeout -s INT` so a stopped run still reports.
set -u
LIMIT=${LIMIT:-500}; DEADLINE=${DEADLINE:-570}; PROFILE=${PROFILE:-paper}; DEV=${DEV:-cuda}; PY=${PY:-python3}
W=${WORK:-/root/w}; mkdir -p $W; OUT=${OUT:-$W/out}; mkdir -p $OUT
export REPRO_CACHE=$W/rc HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 MPLBACKEND=Agg PYTHONUNBUFFERED=1 OMP_NUM_THREADS=7 \
       PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
t0=$(date +%s)
if [ -z "${NOINSTALL:-}" ]; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl 2>&1 | tail -n 2
  export PYTHONPATH=/tmp/site
fi
rm -rf $REPRO_CACHE && mkdir -p $REPRO_CACHE && cp -r .gpuc/cache/* $REPRO_CACHE/
{ nvidia-smi -L 2>&1; $PY -c "import torch,transformers,datasets,pytest;print(torch.__version__,transformers.__version__,datasets.__version__,pytest.__version__,torch.cuda.is_available())"; \
  lscpu | grep -E 'Model name|^CPU\(s\)'; git log --oneline -1; git status --short | head; } > $OUT/device.txt 2>&1
echo "setup $(( $(date +%s)-t0 )) s" >> $OUT/device.txt
run() {  # name, limit, pytest args...
  local n=$1 LIMIT=$2; shift 2
  local s=$(date +%s)
  timeout -s INT -k 15 $LIMIT $PY -m pytest -p no:cacheprovider -q -rA --durations=0 "$@" --profile $PROFILE --device $DEV \
     --baseline off --artifacts $W/art$n > $W/run$n.log 2>&1
  echo "rc=$? wall $(( $(date +%s)-s )) s" >> $W/run$n.log
}
( while sleep 30; do nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader; done ) > $W/smi.log 2>&1 &
run D $LIMIT "claims/test_sinks.py::test_positional_scaling_flattens_the_std_at_init" &
run E $LIMIT "claims/test_born_biased.py::test_preference_grows_with_length_and_size" &
wait %2 %3
left=$(( DEADLINE - ($(date +%s)-t0) ))
if [ $left -ge 90 ]; then
  run F $left "claims/test_born_biased.py::test_contraction_direction_names_the_favourite" \
      "claims/test_born_biased.py::test_direction_agreement_rate_matches_source" \
      "claims/test_born_biased.py::test_mlp_drives_contraction_attention_alone_does_not" \
      "claims/test_born_biased.py::test_attention_amplifies_mlp_contraction_layer_by_layer"
else echo "F not started: $left s left" > $W/runF.log; fi
kill %1 2>/dev/null
echo "total $(( $(date +%s)-t0 )) s" >> $OUT/device.txt
for n in D E F; do tar -cf $OUT/$n.tar -C $W run$n.log art$n 2>/dev/null; done
cp $W/smi.log $OUT/
tail -n 6 $W/run*.log
