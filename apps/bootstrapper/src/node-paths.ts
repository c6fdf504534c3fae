import { join } from 'node:path';
import {
  KUBELET_CERT_DIR,
  KUBELET_SERVING_CERT_FILE,
  KUBELET_SERVING_KEY_FILE,
} from '@constellation/kubeadm/kubelet-paths';

/** Every file the bootstrapper reads or writes, under one root (`/` on a real node). */
export interface NodePaths {
  root: string;
  /** The state disk's first-boot passphrase, until it is replaced by the derived key. */
  initialDiskKey: string;
  /** The kubelet's serving certificate and key, where the KubeletConfiguration points. */
  kubeletServingCert: string;
  kubeletServingKey: string;
  /** The kubelet's --cert-dir, holding its client credential (kubelet-client-current.pem). */
  kubeletCertDir: string;
  kubernetesPki: string;
  adminConf: string;
  /** Where kubeadm configuration files are written before kubeadm runs. */
  kubeadmDir: string;
  /** What the node last heard from the JoinService (JSON, see join-status.ts). */
  joinStatus: string;
  /** This boot configured Kubernetes on the node; only the kubelet's start remained (kubernetes-configured.ts). */
  kubernetesConfigured: string;
  /** Control planes: the local attestation agent for the JoinService on this machine (unix socket, 0600). */
  attestationAgentSocket: string;
}

export function nodePaths(root: string): NodePaths {
  return {
    root,
    initialDiskKey: join(root, 'run', 'cryptsetup-keys.d', 'state.key'),
    kubeletServingCert: join(root, KUBELET_SERVING_CERT_FILE),
    kubeletServingKey: join(root, KUBELET_SERVING_KEY_FILE),
    kubeletCertDir: join(root, KUBELET_CERT_DIR),
    kubernetesPki: join(root, 'etc', 'kubernetes', 'pki'),
    adminConf: join(root, 'etc', 'kubernetes', 'admin.conf'),
    kubeadmDir: join(root, 'run', 'kubeadm'),
    joinStatus: join(root, 'run', 'constellation', 'join-status.json'),
    kubernetesConfigured: join(root, 'run', 'constellation', 'kubernetes-configured'),
    attestationAgentSocket: join(root, 'run', 'constellation', 'attestation-agent.sock'),
  };
}
