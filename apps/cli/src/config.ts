import { DEFAULT_KUBERNETES_VERSION } from '@constellation/kubeadm';

/**
 * The CLI's documented defaults, in one place. Commands take their options from the command line
 * and fall back to these; nothing else in the CLI hard-codes them.
 */
export const CLI_DEFAULTS = {
  /** Kubernetes version written by `config generate` and used by `mini`. */
  kubernetesVersion: DEFAULT_KUBERNETES_VERSION,
  /** Where `config generate` points `init` until the user edits it. */
  initEndpoint: '10.42.0.2:9000',
  serviceCidr: '10.96.0.0/12',
  /** Ports a bare `host` is completed with. */
  verifyPort: 30081,
  recoveryPort: 9999,
  initPort: 9000,
  mini: { controlPlanes: 1, workers: 2, maxControlPlanes: 9, maxWorkers: 64 },
} as const;
