#!/usr/bin/env bash
# Clean install, unit tests and .vsix packaging of the VS Code extension.
# Works offline once the npm registry is reachable for `npm ci`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
npm ci --no-audit --no-fund
npm test
npm run package
ls -l racelens.vsix
