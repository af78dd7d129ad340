#!/bin/bash
# second device call: SK-1 (fixed: Σ A² per head) and BB-1.2 (fixed: size direction) side by side
set -u
LIMIT=${LIMIT:-270}; PROFILE=${PROFILE:-paper}; DEV=${DEV:-cuda}; PY=${PY:-python3}
W=${WORK:-/root/w}; mkdir -p $W
export REPRO_CACHE=$W/rc HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 MPLBACKEND=Agg PYTHONUNBUFFERED=1 OMP_NUM_THREADS=7 \
       PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
t0=$(date +%s)
if [ -z "${NOINSTALL:-}" ]; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl 2>&1 | tail -n 2
  export PYTHONPATH=/tmp/site
fi
rm -rf $REPRO_CACHE && mkdir -p $REPRO_CACHE && cp -r .gpuc/cache/* $REPRO_CACHE/
{ nvidia-smi -L 2>&1; git log --oneline -1; git status --short | head; } > $OUT/device2.txt 2>&1
echo "setup $(( $(date +%s)-t0 )) s" >> $OUT/device2.txt
run() {  # name, pytest args...
  local n=$1; shift
  local s=$(date +%s)
  timeout -s INT -k 15 $LIMIT $PY -m pytest -p no:cacheprovider -q -rA --durations=0 "$@" --profile $PROFILE --device $DEV \
     --baseline off --artifacts $W/art$n > $W/run$n.log 2>&1
  echo "rc=$? wall $(( $(date +%s)-s )) s" >> $W/run$n.log
}
run D "claims/test_sinks.py::test_positional_scaling_flattens_the_std_at_init" &
run E "claims/test_born_biased.py::test_preference_grows_with_length_and_size" &
wait
echo "total $(( $(date +%s)-t0 )) s" >> $OUT/device2.txt
for n in D E; do tar -cf $OUT/$n.tar -C $W run$n.log art$n 2>/dev/null; done
tail -n 4 $W/run*.log
