#!/usr/bin/env bash
# npm test on a machine made slower on purpose: one of the cores taken by a competing load
# (Debian's stress-ng spinning on one CPU) for the whole run, set-up included. Machines of this
# kind differ about 2x in speed and CI runs on the submitter's own: a suite that passes here
# passes on the slower ones. Usage: bash scripts/test-under-load.sh [cores to take, default 1]
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh test || exit 1
stress-ng --cpu "${1:-1}" --cpu-method matrixprod --quiet &
load=$!
trap 'kill "$load" 2>/dev/null; wait "$load" 2>/dev/null' EXIT
printf 'test-under-load: stress-ng (pid %s) takes %s core(s) of %s for the whole run\n' "$load" "${1:-1}" "$(nproc)" >&2
npm test
