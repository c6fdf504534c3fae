import { inject } from 'vitest';

/**
 * The control plane that the repository's global setup (kubernetes.global-setup.ts) started for
 * this test run: the real programs, in a network namespace of the run's own. Tests share it, each
 * in its own namespace or with objects of its own names.
 */
export interface SharedKubernetes {
  /** The built programs' directory (tools/kubernetes/build.mjs). */
  binDir: string;
  release: string;
  apiServerUrl: string;
  caCertificatePem: string;
  /** kubeadm's root: `etc/kubernetes/pki` holds the cluster CA and its key. */
  root: string;
  /** system:masters (kubeadm's super-admin.conf). */
  superAdminKubeconfig: string;
  /** kubeadm:cluster-admins (kubeadm's admin.conf). */
  adminKubeconfig: string;
  /** The network namespace it runs in, and its address there. */
  namespace: string;
  ip: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    kubernetes: SharedKubernetes | null;
    /** The built programs' directory (tools/kubernetes/build.mjs), provided to every package. */
    kubernetesBinDir: string;
  }
}

/** The run's control plane; fails, saying why, in a project the global setup did not start it for. */
export function sharedKubernetes(): SharedKubernetes {
  const provided = inject('kubernetes');
  if (provided === null) {
    throw new Error(
      'no control plane was started for this test run: add this package to KUBERNETES_PROJECTS in ' +
        'tools/test/kubernetes.global-setup.ts',
    );
  }
  return provided;
}

/** The built programs' directory, for tests that run kubeadm, kubectl or a control plane of their own. */
export function kubernetesBinDir(): string {
  return inject('kubernetesBinDir');
}
