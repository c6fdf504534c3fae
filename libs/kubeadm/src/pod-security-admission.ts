import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { stringify } from 'yaml';

/** The admission configuration file, relative to /etc/kubernetes (the bootstrapper writes it there). */
export const ADMISSION_CONFIG_FILE = 'admission/admission-config.yaml';
/** Where every control plane's API server reads it (mounted read-only into its static pod). */
export const ADMISSION_CONFIG_DIR = `/etc/kubernetes/${dirname(ADMISSION_CONFIG_FILE)}`;

/**
 * The API server's admission configuration: Pod Security `baseline` enforced by default in every
 * namespace but kube-system (and warned), `restricted` audited. Without a default, namespaces are
 * `privileged`, and a tenant allowed only to create pods in its own namespace mounts the node's
 * root with `hostPath: /`. kube-system runs the cluster's own node agents (kube-proxy, the
 * JoinService), which need host access. A cluster admin opts a namespace out with the label
 * `pod-security.kubernetes.io/enforce: privileged`; the e2e conformance framework labels its
 * namespaces with the level each test needs.
 */
export function admissionConfiguration(): string {
  return stringify({
    apiVersion: 'apiserver.config.k8s.io/v1',
    kind: 'AdmissionConfiguration',
    plugins: [
      {
        name: 'PodSecurity',
        configuration: {
          apiVersion: 'pod-security.admission.config.k8s.io/v1',
          kind: 'PodSecurityConfiguration',
          defaults: {
            enforce: 'baseline',
            'enforce-version': 'latest',
            audit: 'restricted',
            'audit-version': 'latest',
            warn: 'baseline',
            'warn-version': 'latest',
          },
          exemptions: { usernames: [], runtimeClasses: [], namespaces: ['kube-system'] },
        },
      },
    ],
  });
}

/** Writes the admission configuration under a node's /etc/kubernetes (`kubernetesDir`), before kubeadm starts its API server. */
export async function writeAdmissionConfiguration(kubernetesDir: string): Promise<void> {
  const file = join(kubernetesDir, ADMISSION_CONFIG_FILE);
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, admissionConfiguration(), { mode: 0o644 });
}
