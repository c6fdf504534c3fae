import type { CoreV1Api, V1ConfigMap } from '@kubernetes/client-node';
import { Refusal } from '@constellation/errors';
import { apiErrorMessage } from './api-error-message.js';
import { apiStatusCode } from './api-status-code.js';

/**
 * ConfigMaps in one namespace that record who claimed something first (a node name, an address):
 * created once and never overwritten, so replicas racing for the same claim all read the one
 * that won. Neither their names nor their data are secret.
 */
export class ClaimRecords {
  readonly namespace: string;
  private readonly core: CoreV1Api;
  /** What the records are, for the refusal when the API fails: "node-name binding". */
  private readonly what: string;

  constructor(core: CoreV1Api, namespace: string, what: string) {
    this.core = core;
    this.namespace = namespace;
    this.what = what;
  }

  /** The record's data; undefined when it does not exist. */
  async read(name: string): Promise<Record<string, string> | undefined> {
    try {
      return (await this.core.readNamespacedConfigMap({ name, namespace: this.namespace })).data ?? {};
    } catch (err) {
      if (apiStatusCode(err) === 404) return undefined;
      throw this.unavailable(err);
    }
  }

  /** Creates the record holding `data` unless it exists; the data it holds either way. */
  async claim(name: string, data: Record<string, string>): Promise<Record<string, string>> {
    const body: V1ConfigMap = {
      metadata: { name, namespace: this.namespace, labels: { 'app.kubernetes.io/managed-by': 'constellation' } },
      data,
    };
    try {
      await this.core.createNamespacedConfigMap({ namespace: this.namespace, body });
      return data;
    } catch (err) {
      if (apiStatusCode(err) !== 409) throw this.unavailable(err);
    }
    return (await this.read(name)) ?? {};
  }

  private unavailable(err: unknown): Refusal {
    return new Refusal(
      'unavailable',
      'api-unavailable',
      `could not read or record the ${this.what}: ${apiErrorMessage(err)}`,
      { retryAfterMs: 1_000 },
    );
  }
}
