#!/usr/bin/env bash
# `npm run mini` brings up the default local cluster; `npm run mini -- down` removes it. Installs
# what is missing and builds the programs (tools/dev/mini-prepare.sh), then runs
# `constellation mini <args>` (default: up), telling `mini up` where the Kubernetes programs are
# and, with --vm-workers, which node image the VMs boot.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
# No subcommand, or options only: `up` with them (npm run mini -- --workers 2).
if [ "$#" -eq 0 ] || [ "${1#-}" != "$1" ]; then set -- up "$@"; fi
prepare=()
if [ "$1" = up ] && printf '%s\n' "$@" | grep -qE -- '^--vm-workers(=|$)' && ! printf '%s\n' "$@" | grep -qE -- '^--node-image(=|$)'; then
  prepare=(--node-image)
fi
KUBERNETES_BIN_DIR="" NODE_IMAGE=""
while IFS='=' read -r key value; do
  case "$key" in KUBERNETES_BIN_DIR) KUBERNETES_BIN_DIR="$value" ;; NODE_IMAGE) NODE_IMAGE="$value" ;; esac
done < <(bash tools/dev/mini-prepare.sh "${prepare[@]}")
[ -n "$KUBERNETES_BIN_DIR" ] || { echo "mini: preparation failed (see above)" >&2; exit 1; }
[ "${#prepare[@]}" -eq 0 ] || [ -n "$NODE_IMAGE" ] || { echo "mini: the node image build failed (see above)" >&2; exit 1; }
if [ "$1" = up ]; then
  shift
  [ -z "$NODE_IMAGE" ] || set -- "$@" --node-image "$NODE_IMAGE"
  set -- up --kubernetes-bin-dir "$KUBERNETES_BIN_DIR" "$@"
  echo "==> kubectl for this cluster: $KUBERNETES_BIN_DIR/kubectl (the built one, of the control plane's release)" >&2
fi
exec node apps/cli/dist/constellation.mjs mini "$@"
