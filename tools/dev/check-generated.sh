#!/usr/bin/env bash
# Fails when libs/proto/src/gen is not exactly what the .proto files generate, and prints the
# difference. Works on any checkout (no git needed): usage: check-generated.sh [repo-root]
set -euo pipefail
root="$(cd "${1:-$(dirname "${BASH_SOURCE[0]}")/../..}" && pwd)"
cd "$root"
buf="$root/node_modules/.bin/buf"
[ -x "$buf" ] || buf="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/node_modules/.bin/buf"

"$buf" lint
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
"$buf" generate --template libs/proto/buf.gen.yaml -o "$scratch"
if ! diff -ru libs/proto/src/gen "$scratch/libs/proto/src/gen"; then
  echo "error: libs/proto/src/gen is stale: the .proto files changed without regenerating." >&2
  echo "       run 'npm run generate' and commit the result." >&2
  exit 1
fi
echo "generated code is fresh"
