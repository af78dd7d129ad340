#!/bin/bash
# one device call: three pytest processes side by side on one GPU, --profile paper
#   A: SK-1 (after a 1-seed timing probe)   B: RS-3 (both tests)   C: the BB file
set -u
LIMIT=${LIMIT:-420}; PROFILE=${PROFILE:-paper}; DEV=${DEV:-cuda}; PY=${PY:-python3}
W=${WORK:-/root/w}; mkdir -p $W
export REPRO_CACHE=$W/rc HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 MPLBACKEND=Agg PYTHONUNBUFFERED=1 OMP_NUM_THREADS=5
t0=$(date +%s)
if [ -z "${NOINSTALL:-}" ]; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl 2>&1 | tail -2
  export PYTHONPATH=/tmp/site
fi
rm -rf $REPRO_CACHE && mkdir -p $REPRO_CACHE && cp -r .gpuc/cache/* $REPRO_CACHE/
{ nvidia-smi -L 2>&1; $PY -c "import torch,transformers,pytest;print(torch.__version__,transformers.__version__,pytest.__version__,torch.cuda.is_available())"; lscpu | grep -E 'Model name|^CPU\(s\)|Flags' | cut -c1-200; git rev-parse HEAD; git status --short | head; } > $OUT/device.txt 2>&1
echo "setup $(( $(date +%s)-t0 )) s" >> $OUT/device.txt
run() {  # name, pytest args...
  local n=$1; shift
  local s=$(date +%s)
  timeout -s INT -k 20 $LIMIT $PY -m pytest -p no:cacheprovider -q -rA --durations=0 "$@" --profile $PROFILE --device $DEV \
     --baseline off --artifacts $W/art$n > $W/run$n.log 2>&1
  echo "rc=$? wall $(( $(date +%s)-s )) s" >> $W/run$n.log
}
probe() {
  $PY - <<'PY' > $W/probeA.log 2>&1
import time, torch
from repro.sinks.experiments import init_std_profile, nano_llama
dev = "cuda" if torch.cuda.is_available() else "cpu"
big = dict(n_layer=12, n_head=12, d_model=768, vocab_size=32000)
def sync(): dev == "cuda" and torch.cuda.synchronize()
t = time.time(); nano_llama("baseline", big, 2048, 0, dev, build_layers=1); sync(); print("one-block build", round(time.time() - t, 2), "s")
for n in (10, 200):
    sync(); t = time.time(); init_std_profile("attenuation", big, 2048, (0,), n_seq=n, device=dev); sync()
    print(f"one seed, one variant, n_seq {n}: {time.time() - t:.2f} s (incl. build)")
if dev == "cuda": print("peak GiB", round(torch.cuda.max_memory_allocated() / 2**30, 1))
PY
}
( probe; run A "claims/test_sinks.py::test_positional_scaling_flattens_the_std_at_init" ) &
( run B "claims/test_residual_stream.py::test_pre_norm_keeps_gradient_at_first_layer" \
        "claims/test_residual_stream.py::test_post_norm_loses_gradient_at_depth" ) &
( run C claims/test_born_biased.py ) &
wait
echo "total $(( $(date +%s)-t0 )) s" >> $OUT/device.txt
for n in A B C; do
  for f in $W/art$n/claims*.json $W/art$n/report.md; do [ -f $f ] && cp $f $W/art$n/_$(basename $f); done
  tar -cf $OUT/$n.tar -C $W run$n.log art$n 2>/dev/null
done
cp $W/probeA.log $OUT/ 2>/dev/null
tail -n 3 $W/run*.log; cat $W/probeA.log
