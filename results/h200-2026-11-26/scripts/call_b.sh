#!/bin/bash
# device call 2: SmolLM2 GGUF reassembled, CA-4, RS-8, SF-6 at paper on smollm2-135m
set -u
LIMIT=${LIMIT:-170}; PROFILE=${PROFILE:-paper}; DEV=${DEV:-cuda}
export REPRO_CACHE=${REPRO_CACHE:-/root/rc} HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 MPLBACKEND=Agg
t0=$(date +%s)
G="$REPRO_CACHE/../gg"
if [ ! -f "$G/smol.xz.part00" ]; then echo "part00 missing: fresh machine" | tee $OUT/runB.log; exit 3; fi
mkdir -p "$REPRO_CACHE/fixtures/smollm2-135m"
cat "$G/smol.xz.part00" .gpub/smol.xz.part01 .gpub/smol.xz.part02 | xz -dc > "$REPRO_CACHE/fixtures/smollm2-135m/SmolLM2-135M-Instruct.Q4_1.gguf"
cp .gpub/LICENSE "$REPRO_CACHE/fixtures/smollm2-135m/LICENSE"
sha256sum "$REPRO_CACHE/fixtures/smollm2-135m/SmolLM2-135M-Instruct.Q4_1.gguf" > $OUT/gguf.sha
echo "setup $(( $(date +%s)-t0 )) s" >> $OUT/gguf.sha
timeout -s INT -k 20 $LIMIT python3 -m pytest -p no:cacheprovider -q -rA \
  "claims/test_residual_stream.py::test_tuned_lens_beats_logit_lens" \
  --model smollm2-135m --profile $PROFILE --device $DEV --baseline off --artifacts /root/artB ${EXTRA:-} > $OUT/runB.log 2>&1
echo "rc=$? total $(( $(date +%s)-t0 )) s" >> $OUT/runB.log
for f in /root/artB/claims*.json /root/artB/report.md; do [ -f $f ] && cp $f $OUT/B_$(basename $f); done
tar -cf $OUT/figsB.tar -C /root/artB figures 2>/dev/null
tail -5 $OUT/runB.log
