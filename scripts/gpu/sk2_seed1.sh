#!/bin/bash
# Queue item: SK-2's further seed 1 of decide-sinks (issue 64; the chunk's 3 trios are ≈ 17 min on an
# H100, over one call): the seed's trio (baseline, amplification, attenuation; 6L × 128, 3,000 steps of
# 64 × 64 on the mix corpus) trained and read by `repro sk2-seed`, its stored entry (the sink curves,
# ≈ 0.3 MB) exported to $OUT/sk2-seeds/. Copy that folder's files into .cache/gpu/sk2-seeds/ here (and
# commit them with the run's results) before the sk2_decide call, which carries them.
source "$(dirname "$0")/lib.sh"
gpu_device_txt
gpu_repro sk2_seed1 "${LIMIT:-480}" sk2-seed --profile decide-sinks --corpus mix --seed 1 --export "$OUT/sk2-seeds"
gpu_done
