export { buildBundles } from './build-bundles.js';
export { freePort, freePortPair, isPortFree } from '@constellation/swtpm';
export type { CommandResult } from './run-command.js';
export { findOnPath } from '@constellation/swtpm';
export { requireProgram, runChecked, runCommand } from './run-command.js';
export type { Swtpm, UnixSwtpm } from './swtpm.js';
export { startSwtpm, startUnixSwtpm, useTestEkCa } from './swtpm.js';
export type { TempDir } from './temp-dir.js';
export { createTempDir, tempDirForTest } from './temp-dir.js';

export type { TestHttpServer } from './http-server.js';
export { startHttpServer } from './http-server.js';
export { sleep, waitFor, withTimeout } from './wait-for.js';
export { repoRoot, runTypeScript } from './run-typescript.js';

export { applyTextMutation, textMutation } from './text-mutation.js';
export type { NeverClosingRelay } from './never-closing-relay.js';
export { startNeverClosingRelay } from './never-closing-relay.js';
export type { SourceRelay } from './source-relay.js';
export { startSourceRelay } from './source-relay.js';
export type { SharedKubernetes } from './shared-control-plane.js';
export { kubernetesBinDir, sharedKubernetes } from './shared-control-plane.js';
export type { ApiRelay, RelayedRequest } from './api-relay.js';
export { startApiRelay } from './api-relay.js';
