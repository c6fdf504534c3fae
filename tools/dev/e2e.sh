#!/usr/bin/env bash
# `npm run e2e`: the end-to-end fault tests on real mini clusters (apps/cli/src/e2e), too long for
# npm test's budget: a node losing power mid-join, a worker cut off mid-join, the JoinService killed
# mid-storm, an etcd member killed while workers join, every node of a 3 + 2 cluster losing power.
# About 40 minutes on 2 cores. Installs and builds what it needs; prints `N passed, N failed` last.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
export NX_DAEMON=false NX_NO_CLOUD=true NX_TUI=false
if ! bash tools/dev/mini-prepare.sh >/dev/null; then
  echo "e2e: preparation failed (see above)"
  echo "0 passed, 1 failed"
  exit 1
fi
mkdir -p .tmp
rm -f .tmp/e2e.json
npx vitest run --config vitest.e2e.config.ts --reporter=default --reporter=json --outputFile.json=.tmp/e2e.json "$@"
code=$?
if [ -f .tmp/e2e.json ]; then
  node tools/dev/test-summary.mjs .tmp/e2e.json
else
  echo "0 passed, 1 failed"
  code=1
fi
exit "$code"
