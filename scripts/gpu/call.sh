#!/bin/bash
# One device call of the queue (README.md beside this file):
#   run: command "bash scripts/gpu/call.sh s1c1", carry [".cache/gpu/s1c1"], timeout_s from the README
# Stashes the parts the call carries; a transfer call ends there. Else assembles the payloads its
# item needs (exit 3 naming a missing part: the machine was fresh) and runs scripts/gpu/<item>.sh.
set -u
C=.cache/gpu/${1:?the call, e.g. s1c1}
if [ ! -f "$C/call.json" ]; then
  echo "no $C/call.json: stage first (python scripts/gpu/gpu_queue.py stage) and carry \".cache/gpu/$1\""; exit 2
fi
source scripts/gpu/lib.sh
item=$($PY -c 'import json, sys; print(json.load(open(sys.argv[1]))["item"] or "")' "$C/call.json")
if [ -z "$item" ]; then
  $PY scripts/gpu/gpu_queue.py stash "$C" --stash "$STASH"; echo "transfer call $1: $(( $(date +%s) - T0 )) s"; exit 0
fi
gpu_payloads "$C" || exit 3
bash "scripts/gpu/$item.sh"
