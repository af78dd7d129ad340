#!/bin/bash
# Queue item 2d: SF-6 … SF-10 at --profile paper on Gemma-3-270M (SF-8's generations included).
source "$(dirname "$0")/lib.sh"
gpu_device_txt
gpu_claims sf_gemma_b "${LIMIT:-480}" claims/test_spectral_filters.py --profile paper --model gemma3-270m --corpus brown \
  --claim SF-6,SF-7,SF-8,SF-9,SF-10
gpu_done
