#!/bin/bash
# Queue item 4: the BB decide chunks (`repro plan --profile decide`), one pytest each, in order:
# decide-bb-probes (BB-1.1), decide-bb-lengths (BB-1.2, BB-1.3), decide-bb-direction (BB-2.2).
source "$(dirname "$0")/lib.sh"
gpu_device_txt
gpu_claims bb_probes "${LIMIT_PROBES:-120}" claims/test_born_biased.py --profile decide-bb-probes --corpus brown --claim BB-1.1
gpu_claims bb_lengths "${LIMIT_LENGTHS:-90}" claims/test_born_biased.py --profile decide-bb-lengths --corpus brown --claim BB-1.2,BB-1.3
gpu_claims bb_direction "${LIMIT_DIRECTION:-90}" claims/test_born_biased.py --profile decide-bb-direction --corpus brown --claim BB-2.2
gpu_done
