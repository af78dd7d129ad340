#!/bin/bash
# Queue item 3: decide-ca4 (CA-4's 'minimal retraining' half: the declared context-axis fine-tune
# and its causal twin, then the held-out windows) on smollm2-135m alone — the plan's two models do not
# fit one call together (6.05 + 3.67 min of floor, not measured).
source "$(dirname "$0")/lib.sh"
gpu_device_txt
gpu_claims ca4_smollm2 "${LIMIT:-510}" claims/test_context_axis.py --profile decide-ca4 --model smollm2-135m --corpus brown --claim CA-4
gpu_done
