#!/bin/bash
# Queue item 2a: every SF claim at --profile paper on SmolLM2 (the cells of run5/run7 of
# results/h100-2026-11-25 and call2 of results/h200-2026-11-26, under the current rules).
source "$(dirname "$0")/lib.sh"
gpu_device_txt
gpu_claims sf_smollm2 "${LIMIT:-450}" claims/test_spectral_filters.py --profile paper --model smollm2-135m --corpus brown
gpu_done
