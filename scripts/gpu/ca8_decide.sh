#!/bin/bash
# Queue item 5: decide-ca8 (CA-8, 8 paired seeds of the causal, context-axis and axis-drop LMs) on
# the mix corpus: Brown and the mix payload's four registry corpora, assembled, with the Brown BPE
# trained and the mix tokenised, cold on the device (≈ 43 s on 2 CPU cores here) before training.
source "$(dirname "$0")/lib.sh"
gpu_device_txt
gpu_claims ca8_decide "${LIMIT:-360}" claims/test_context_axis.py --profile decide-ca8 --corpus mix --claim CA-8
gpu_done
