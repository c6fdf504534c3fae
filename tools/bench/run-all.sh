#!/usr/bin/env bash
# `npm run bench`: every benchmark, one after another. Each prints its own figures.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
bash tools/dev/ensure-deps.sh
for bench in tools/bench/tpm-quote.ts tools/bench/credential.ts tools/bench/atls-handshake.ts tools/bench/hostile-hellos.ts tools/bench/eventlog.ts apps/joinservice/src/join-storm.bench.ts apps/joinservice/src/silent-hellos.bench.ts apps/bootstrapper/src/startup.bench.ts tools/bench/mini-up.ts tools/bench/vm-boot.ts libs/packaging/src/executables.bench.ts; do
  echo "==> $bench"
  node --conditions=@constellation/source --import tsx "$bench"
done
