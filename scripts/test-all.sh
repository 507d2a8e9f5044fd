#!/usr/bin/env bash
# Runs every racelens test: the Rust workspace (unit, snapshot, incrementality,
# fixture and Goblint-floor, LSP end-to-end, torture and property tests), the
# VS Code extension's tests and .vsix packaging, and the headless Neovim test.
# Installs what a fresh Debian machine lacks (neovim, node/npm) when run as root.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

have() { command -v "$1" >/dev/null 2>&1; }
SUDO=""
if [ "$(id -u)" -ne 0 ] && have sudo; then SUDO="sudo"; fi
install_pkgs() {
  echo "test-all: installing $*" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@"
}
have nvim || install_pkgs neovim
have node && have npm || install_pkgs nodejs npm
have gcc || install_pkgs gcc
have python3 || install_pkgs python3

if [ ! -d ../shared/bench/goblint-regression ]; then
  echo "test-all: ../shared (benchmarks and score.py) must sit beside the repository" >&2
  exit 2
fi

echo "== cargo build (release)"
cargo build --release --locked -p racelens
echo "== cargo test (release, whole workspace)"
cargo test --release --locked --workspace
echo "== VS Code extension: npm ci, node --test, vsce package"
editors/vscode/build.sh
echo "== Neovim plug-in: headless end-to-end test"
editors/nvim/test/run.sh target/release/racelens
echo "test-all: all tests passed"
