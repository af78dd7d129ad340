#!/bin/bash
# Queue item 2b: the stale BB paper cells — BB-1.3, BB-2.2 (the directions fixture: 100 random
# 124M models), BB-3, BB-3.2a, BB-4.1, BB-5 — at --profile paper under the current rules.
source "$(dirname "$0")/lib.sh"
gpu_device_txt
gpu_claims bb_paper "${LIMIT:-380}" claims/test_born_biased.py --profile paper --corpus brown \
  --claim BB-1.3,BB-2.2,BB-3,BB-3.2a,BB-4.1,BB-5
gpu_done
