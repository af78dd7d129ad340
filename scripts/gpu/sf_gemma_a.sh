#!/bin/bash
# Queue item 2c: SF-1 … SF-5 at --profile paper on Gemma-3-270M (never run at paper); SF-6 … SF-10
# are sf_gemma_b.sh (one call cannot hold the ten: the plan's sweeps alone are 597 s on an H200).
source "$(dirname "$0")/lib.sh"
gpu_device_txt
gpu_claims sf_gemma_a "${LIMIT:-360}" claims/test_spectral_filters.py --profile paper --model gemma3-270m --corpus brown \
  --claim SF-1,SF-2,SF-3,SF-4,SF-5
gpu_done
