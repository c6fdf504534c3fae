import type { CoreV1Api } from '@kubernetes/client-node';
import { readClusterConfig } from '@constellation/kubeadm';
import type { ClusterConfig } from '@constellation/kubeadm';

/**
 * The cluster configuration ConfigMap, read at most once per `maxAgeMs` and once at a time: in a
 * storm every ticket needs it, and it changes only on upgrades. A failed read is not kept.
 */
export class ClusterConfigCache {
  private cached: { config: ClusterConfig; readAt: number } | undefined;
  private reading: Promise<ClusterConfig> | undefined;

  constructor(
    private readonly core: CoreV1Api,
    private readonly maxAgeMs: number,
  ) {}

  async get(now = Date.now()): Promise<ClusterConfig> {
    if (this.cached !== undefined && now - this.cached.readAt < this.maxAgeMs) return this.cached.config;
    this.reading ??= readClusterConfig(this.core).then(
      (config) => {
        this.cached = { config, readAt: Date.now() };
        this.reading = undefined;
        return config;
      },
      (err: unknown) => {
        this.reading = undefined;
        throw err;
      },
    );
    return this.reading;
  }
}
