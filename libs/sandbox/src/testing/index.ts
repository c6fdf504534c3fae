// Test-only entry point: where the kubeadm stand-in's program is, for tests that install it as
// `kubeadm` (with installTypeScriptCommand). The product and mini run the bundled dist/kubeadm.mjs.
import { fileURLToPath } from 'node:url';

/** The kubeadm stand-in's TypeScript entry (`kubeadm init|join|reset|token …`). */
export const KUBEADM_STANDIN_ENTRY = fileURLToPath(new URL('../kubeadm-standin/main.ts', import.meta.url));
export type { ApiFailure } from './api-failure.js';
export { apiFailure } from './api-failure.js';
