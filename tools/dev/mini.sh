#!/usr/bin/env bash
# `npm run mini` brings up the default local cluster; `npm run mini -- down` removes it. Installs
# what is missing, builds the programs, then runs `constellation mini <args>` (default: up).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
export NX_DAEMON=false NX_NO_CLOUD=true NX_TUI=false
bash tools/dev/ensure-deps.sh
npx nx run-many -t build --outputStyle=static --projects=@constellation/cli,@constellation/bootstrapper,@constellation/joinservice,@constellation/sandbox >/dev/null
[ "$#" -gt 0 ] || set -- up
exec node apps/cli/dist/constellation.mjs mini "$@"
