#!/bin/bash
# device call 1: setup + SK-1, RS-3 at paper (no GGUF needed)
set -u
LIMIT=${LIMIT:-210}; PROFILE=${PROFILE:-paper}; DEV=${DEV:-cuda}
export REPRO_CACHE=${REPRO_CACHE:-/root/rc} HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 MPLBACKEND=Agg
t0=$(date +%s)
[ -z "${NOINSTALL:-}" ] && python3 -m pip install --no-deps -q .gpuw/*.whl 2>&1 | tail -2
mkdir -p "$REPRO_CACHE" && tar -xJf .gpua/brown.tar.xz -C "$REPRO_CACHE"
mkdir -p "$REPRO_CACHE/../gg" && cp .gpua/smol.xz.part00 "$REPRO_CACHE/../gg/"
{ nvidia-smi -L; python3 -c "import torch,transformers,datasets,gguf,pytest;print(torch.__version__,transformers.__version__,datasets.__version__,pytest.__version__,torch.cuda.is_available())"; lscpu | grep -E 'Model name|^CPU\(s\)'; } > $OUT/device.txt 2>&1
echo "setup $(( $(date +%s)-t0 )) s" >> $OUT/device.txt
timeout -s INT -k 20 $LIMIT python3 -m pytest -p no:cacheprovider -q -rA \
  "claims/test_sinks.py::test_positional_scaling_flattens_the_std_at_init" \
  "claims/test_residual_stream.py::test_pre_norm_keeps_gradient_at_first_layer" \
  "claims/test_residual_stream.py::test_post_norm_loses_gradient_at_depth" \
  --profile $PROFILE --device $DEV --baseline off --artifacts /root/artA ${EXTRA:-} > $OUT/runA.log 2>&1
echo "rc=$? total $(( $(date +%s)-t0 )) s" >> $OUT/runA.log
for f in /root/artA/claims*.json /root/artA/report.md; do [ -f $f ] && cp $f $OUT/A_$(basename $f); done
tar -cf $OUT/figsA.tar -C /root/artA figures 2>/dev/null
tail -5 $OUT/runA.log
