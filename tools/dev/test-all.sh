#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs what is missing, then checks generated
# code, formatting, types, lint and bundles, and runs every test. All steps run even when one
# fails; the last line is "N passed, N failed" from vitest's JSON report.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
export NX_DAEMON=false NX_NO_CLOUD=true NX_TUI=false

bash tools/dev/ensure-deps.sh || exit 1

failed=()
step() {
  local name="$1"
  shift
  echo "==> $name"
  local started=$SECONDS
  if "$@"; then
    echo "==> $name: ok ($((SECONDS - started)) s)"
  else
    echo "==> $name: FAILED ($((SECONDS - started)) s)"
    failed+=("$name")
  fi
}

mkdir -p .tmp
rm -f .tmp/vitest.json
step "generated code is fresh" bash tools/dev/check-generated.sh
step "formatting" npx prettier --check --log-level warn .
step "typecheck, lint, build" npx nx run-many -t typecheck lint build --outputStyle=static
# The conformance suite and its test images, for mini's conformance test: built here, with
# progress, so that the test's time bound covers only the run (about 4 min the first time).
step "conformance suite built" node tools/kubernetes/conformance-build.mjs
# The node image the VM tests boot (libs/machines, provider qemu), built here with progress so that
# its build (mmdebstrap, squashfs; both cores for about 1.5 minutes) never runs beside other tests.
step "node image built" node --conditions=@constellation/source --import tsx tools/node-image/build-node-image.ts --guest-agent
step "tests" npx vitest run --reporter=default --reporter=json --outputFile.json=.tmp/vitest.json

if [ "${#failed[@]}" -gt 0 ]; then
  echo "failed steps: ${failed[*]}"
fi
if [ -f .tmp/vitest.json ]; then
  node tools/dev/test-summary.mjs .tmp/vitest.json
else
  echo "0 passed, 1 failed"
  failed+=("no test report")
fi
[ "${#failed[@]}" -eq 0 ]
