#!/usr/bin/env bash
# `npm run test:vm`: the VM end-to-end checks (tools/test/vm-cluster.ts), too long for npm test's
# budget: a mini cluster with an honest VM worker and three tampered ones, verify, reboot, down.
# About 20-30 minutes on 2 cores without KVM. Prints `N passed, N failed` last.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
KUBERNETES_BIN_DIR="" NODE_IMAGE=""
while IFS='=' read -r key value; do
  case "$key" in KUBERNETES_BIN_DIR) KUBERNETES_BIN_DIR="$value" ;; NODE_IMAGE) NODE_IMAGE="$value" ;; esac
done < <(bash tools/dev/mini-prepare.sh --node-image)
if [ -z "$KUBERNETES_BIN_DIR" ] || [ -z "$NODE_IMAGE" ]; then
  echo "test:vm: preparation failed (see above)"
  echo "0 passed, 1 failed"
  exit 1
fi
exec node --conditions=@constellation/source --import tsx tools/test/vm-cluster.ts "$KUBERNETES_BIN_DIR" "$NODE_IMAGE"
