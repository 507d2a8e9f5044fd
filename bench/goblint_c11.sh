#!/usr/bin/env bash
# The Goblint suite scored twice: with the official exclude file, and with our
# C11 corrections (bench/goblint-c11-corrections.txt) added to it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BIN=${1:-target/release/racelens}
EX=../shared/score/goblint-config-specific.txt
echo "official: $(python3 ../shared/score/score.py --bin "$BIN" --suite ../shared/bench/goblint-regression --exclude "$EX" --quiet | tail -1)"
both=$(mktemp)
trap 'rm -f "$both"' EXIT
cat "$EX" bench/goblint-c11-corrections.txt > "$both"
echo "with C11 corrections: $(python3 ../shared/score/score.py --bin "$BIN" --suite ../shared/bench/goblint-regression --exclude "$both" --quiet | tail -1)"
