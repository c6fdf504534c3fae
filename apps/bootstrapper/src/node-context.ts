import type { KubeadmNodeOptions } from '@constellation/kubeadm';
import type { ServiceCheck } from '@constellation/atls';
import type { Issuer } from '@constellation/attestation';
import type { Logger } from '@constellation/logger';
import type { NodeLock } from '@constellation/nodelock';
import type { StateDisk } from '@constellation/state-disk';
import type { Tpm } from '@constellation/tpm';
import type { MetadataClient } from './metadata-client.js';
import type { NodePaths } from './node-paths.js';
import type { RecentLog } from './recent-log.js';

/** Everything the bootstrap paths share: one per node process. */
export interface NodeContext {
  paths: NodePaths;
  tpm: Tpm;
  issuer: Issuer;
  disk: StateDisk;
  lock: NodeLock;
  metadata: MetadataClient;
  logger: Logger;
  recentLog: RecentLog;
  /** kubeadm, and what the node image sets for every kubeadm run (patches, preloaded images, preflight). */
  kubeadm: { program: string; env: NodeJS.ProcessEnv; timeoutMs: number; node?: KubeadmNodeOptions };
  /**
   * What the JoinService must prove before the node uses a join ticket (see joinServiceCheck);
   * undefined only with the unrooted qemu-vtpm variant, which has no identities to check.
   */
  joinServiceCheck?: ServiceCheck;
  /** Port this node's API server binds when it becomes a control plane. */
  apiServerBindPort: number;
  /** Kubernetes version when the Init request names none. */
  defaultKubernetesVersion: string;
  /** Older versions are refused, from the init request and join tickets alike (downgrade protection). */
  minimumKubernetesVersion?: string;
  /**
   * Maps and mounts the state disk, opened by `passphrase` (`fresh`: formatted in this boot, so
   * its file system is made); undefined when the node keeps its files on its root (--state-mount).
   */
  mountStateDisk?: (passphrase: Buffer, fresh: boolean) => Promise<void>;
  /** Starts the kubelet once the node belongs to a cluster (systemctl in production). */
  startKubelet: () => Promise<void>;
  /**
   * Node preparation before kubeadm (signed components, kubelet.env) for the given Kubernetes
   * version; undefined when the node image configures none.
   */
  prepareNode?: (kubernetesVersion: string) => Promise<void>;
}
