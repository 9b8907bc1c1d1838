#!/usr/bin/env bash
# npm test: installs what the tests need, type-checks, lints, looks for dead code (knip), checks the
# formatting, then runs every vitest project.
# The output always ends with one line `N passed, N failed, N skipped` (the summary reporter
# writes it after the tests); a step that fails before them counts as one failure.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
failed_before_tests() {
  printf '\nnpm test: %s failed\n\n0 passed, 1 failed, 0 skipped\n' "$1"
  exit 1
}
bash scripts/setup.sh test || failed_before_tests "set-up (scripts/setup.sh test)"
npm run --silent typecheck || failed_before_tests "the type check (npm run typecheck)"
npm run --silent lint || failed_before_tests "lint (npm run lint)"
npm run --silent lint:dead || failed_before_tests "the dead-code check (npm run lint:dead: exports, files, dependencies nothing uses)"
npm run --silent format:check || failed_before_tests "the format check (npm run format:check; npm run format fixes it)"
exec vitest run
