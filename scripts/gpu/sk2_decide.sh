#!/bin/bash
# Queue item: decide-sinks' claim run (SK-2 over seeds 0, 1, 2; issue 64). It trains the profile's
# own trio (seed 0) and reads seeds 1 and 2 from the entries the sk2_seed1 / sk2_seed2 calls
# exported, carried in .cache/gpu/sk2-seeds/ (run: carry [".cache/gpu/<call>", ".cache/gpu/sk2-seeds"]).
# The entries are keyed by the code (repro/sinks, core, ground), torch and the dtype policy: a seed
# the checks do not find stored (the tree changed between the calls) stops the call (exit 3) before
# the run would train it past the call's limit.
source "$(dirname "$0")/lib.sh"
gpu_device_txt
SEEDS=${SK2_SEEDS:-.cache/gpu/sk2-seeds}
if [ -z "$DRY" ]; then
  if ! ls "$SEEDS"/*.pkl > /dev/null 2>&1; then
    echo "no SK-2 seed entries in $SEEDS: run the sk2_seed1 and sk2_seed2 calls and carry their sk2-seeds files"
    exit 3
  fi
  dest="$REPRO_CACHE/measurements/sk2-seed-trio"
  mkdir -p "$dest" && cp "$SEEDS"/*.pkl "$SEEDS"/*.json "$dest"/
fi
for s in 1 2; do
  gpu_repro "sk2_check$s" "${LIMIT_CHECK:-45}" sk2-seed --profile decide-sinks --corpus mix --seed "$s" --check || exit 3
done
gpu_claims sk2_decide "${LIMIT:-450}" claims/test_sinks.py --profile decide-sinks --corpus mix --claim SK-2
gpu_done
