#!/usr/bin/env bash
# `npm run conformance`: the upstream Kubernetes conformance suite against the running mini
# cluster (tools/conformance/run.ts; see --help). Installs what is missing first, as `npm run mini`
# does (npm packages, Debian packages, the Kubernetes programs); the runner builds the suite.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
bash tools/dev/ensure-deps.sh
exec node --conditions=@constellation/source --import tsx tools/conformance/run.ts "$@"
