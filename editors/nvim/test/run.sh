#!/usr/bin/env bash
# Headless tests of the Neovim plug-in.
#
#   editors/nvim/test/run.sh [PATH_TO_RACELENS]   unit tests + end-to-end test
#                                                 (default: $REPO/target/release/racelens)
#   editors/nvim/test/run.sh --mock               same, against test/mock_server.py
#
# Needs nvim (Debian: apt-get install -y neovim, 0.7.2) on PATH. Set
# RACELENS_E2E_KEEP=1 to keep the work directory, RACELENS_E2E_STRICT_EXPLAIN=1
# to make a missing racelens.explain answer fatal.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PLUGIN="$(cd "$HERE/.." && pwd)"
REPO="$(cd "$HERE/../../.." && pwd)"

if ! command -v nvim >/dev/null 2>&1; then
  echo "run.sh: nvim not found on PATH (Debian: apt-get install -y neovim)" >&2
  exit 1
fi

if [[ "${1:-}" == "--mock" ]]; then
  command -v python3 >/dev/null 2>&1 || { echo "run.sh: --mock needs python3" >&2; exit 1; }
  SERVER_CMD=(python3 "$HERE/mock_server.py" lsp)
else
  BIN="${1:-$REPO/target/release/racelens}"
  case "$BIN" in
    /*) ;;
    */*) BIN="$(pwd)/$BIN" ;;
    *) BIN="$(command -v "$BIN" || echo "$BIN")" ;;
  esac
  if [[ ! -x "$BIN" ]]; then
    echo "run.sh: racelens binary not found or not executable: $BIN" >&2
    echo "        build it with: cargo build --release -p racelens" >&2
    exit 1
  fi
  SERVER_CMD=("$BIN" lsp)
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/racelens-nvim.XXXXXX")"
cleanup() {
  if [[ "${RACELENS_E2E_KEEP:-0}" == "1" ]]; then
    echo "work directory kept: $WORK"
  else
    rm -rf "$WORK"
  fi
}
trap cleanup EXIT

# Isolate Neovim from the user's configuration and state.
export XDG_CONFIG_HOME="$WORK/xdg/config" XDG_DATA_HOME="$WORK/xdg/data"
export XDG_STATE_HOME="$WORK/xdg/state" XDG_CACHE_HOME="$WORK/xdg/cache"
mkdir -p "$XDG_CONFIG_HOME" "$XDG_DATA_HOME" "$XDG_STATE_HOME" "$XDG_CACHE_HOME"
export RACELENS_LSP_LOG_LEVEL="${RACELENS_LSP_LOG_LEVEL:-WARN}"
export RACELENS_MOCK_LOG="$WORK/mock.log"

NVIM=(nvim --headless -i NONE -u "$HERE/minimal_init.lua")
passed=0
failed=0

# --- unit tests -------------------------------------------------------------
export RACELENS_UNIT_RESULT="$WORK/unit.txt"
( cd "$PLUGIN" && timeout 30 "${NVIM[@]}" -c "lua dofile('$HERE/unit.lua')" </dev/null >"$WORK/unit.out" 2>&1 )
rc=$?
if [[ -f "$RACELENS_UNIT_RESULT" ]]; then
  sed 's/^/  /' "$RACELENS_UNIT_RESULT"
  summary="$(tail -n 1 "$RACELENS_UNIT_RESULT")"
  p="$(sed -n 's/^unit: \([0-9]*\) passed, \([0-9]*\) failed$/\1/p' <<<"$summary")"
  f="$(sed -n 's/^unit: \([0-9]*\) passed, \([0-9]*\) failed$/\2/p' <<<"$summary")"
  passed=$((passed + ${p:-0}))
  failed=$((failed + ${f:-1}))
  [[ $rc -eq 0 ]] || [[ "${f:-1}" != 0 ]] || failed=$((failed + 1))
else
  echo "unit tests produced no result (exit $rc):"
  sed 's/^/  | /' "$WORK/unit.out"
  failed=$((failed + 1))
fi

# --- end-to-end test ----------------------------------------------------------
mkdir -p "$WORK/proj"
cp "$HERE/race.c" "$WORK/proj/race.c"
touch "$WORK/proj/.racelens-e2e-root"
export RACELENS_E2E_FILE="$WORK/proj/race.c"
export RACELENS_E2E_RESULT="$WORK/e2e.txt"
RACELENS_E2E_CMD="$(printf '%s\n' "${SERVER_CMD[@]}")"
export RACELENS_E2E_CMD
echo "e2e: ${SERVER_CMD[*]}"
( cd "$WORK/proj" && timeout 60 "${NVIM[@]}" -c "lua dofile('$HERE/e2e.lua')" </dev/null >"$WORK/e2e.out" 2>&1 )
rc=$?
if [[ -f "$RACELENS_E2E_RESULT" ]]; then
  sed 's/^/  /' "$RACELENS_E2E_RESULT"
fi
if [[ $rc -eq 0 ]] && [[ "$(tail -n 1 "$RACELENS_E2E_RESULT" 2>/dev/null)" == "PASS" ]]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
  [[ $rc -eq 124 ]] && echo "e2e: timed out after 60 s"
  echo "e2e: nvim exited with $rc; nvim output:"
  sed 's/^/  | /' "$WORK/e2e.out"
  for log in "$XDG_CACHE_HOME/nvim/lsp.log" "$XDG_STATE_HOME/nvim/lsp.log" "$RACELENS_MOCK_LOG"; do
    if [[ -s "$log" ]]; then
      echo "--- $log (last 60 lines)"
      tail -n 60 "$log" | sed 's/^/  | /'
    fi
  done
fi

echo "nvim: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
