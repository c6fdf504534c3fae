import { createHash } from 'node:crypto';
import type { CoreV1Api, V1ConfigMap } from '@kubernetes/client-node';
import { Refusal } from '@constellation/errors';
import { apiErrorMessage } from './api-error-message.js';
import { apiStatusCode } from './api-status-code.js';

export interface DiskBindingsOptions {
  core: CoreV1Api;
  namespace?: string;
}

const EK_KEY = 'ekPublicKeyHash';

/**
 * Which state disks each machine joined with: one ConfigMap per (machine, disk UUID) pair, holding
 * the machine's id (the EK hash) and the UUID. Neither value is secret, so the service needs no
 * read access to Secrets. A join records its pair; a rejoin ticket is given only for a recorded
 * pair. Disk keys are derived for (UUID, EK) as well, so naming another machine's UUID yields a
 * key for nothing, and keying the record by the pair means nobody can claim a UUID first and lock
 * its real owner out.
 */
export class DiskBindings {
  private readonly core: CoreV1Api;
  private readonly namespace: string;

  constructor(options: DiskBindingsOptions) {
    this.core = options.core;
    this.namespace = options.namespace ?? 'kube-system';
  }

  /** At join: records that this machine joined with `diskUuid` (idempotent). */
  async bind(diskUuid: string, ekPublicKeyHash: string, nodeName: string): Promise<void> {
    const body: V1ConfigMap = {
      metadata: {
        name: bindingName(diskUuid, ekPublicKeyHash),
        namespace: this.namespace,
        labels: { 'app.kubernetes.io/managed-by': 'constellation' },
        annotations: { 'constellation.io/node-name': nodeName },
      },
      data: { [EK_KEY]: ekPublicKeyHash, diskUuid },
    };
    try {
      await this.core.createNamespacedConfigMap({ namespace: this.namespace, body });
      return;
    } catch (err) {
      if (apiStatusCode(err) !== 409) throw unavailable(err);
    }
    // Already recorded: the same pair, unless the short name collided with another machine's.
    if (!(await this.recorded(diskUuid, ekPublicKeyHash))) throw unavailable(new Error('binding name collision'));
  }

  /** At rejoin: this machine must have joined with this disk. */
  async check(diskUuid: string, ekPublicKeyHash: string): Promise<void> {
    if (await this.recorded(diskUuid, ekPublicKeyHash)) return;
    throw new Refusal(
      'denied',
      'disk',
      `this machine never joined the cluster with state disk ${diskUuid}; a rejoin ticket is only given for a disk recorded at the machine's join`,
    );
  }

  private async recorded(diskUuid: string, ekPublicKeyHash: string): Promise<boolean> {
    let binding: V1ConfigMap;
    try {
      binding = await this.core.readNamespacedConfigMap({
        name: bindingName(diskUuid, ekPublicKeyHash),
        namespace: this.namespace,
      });
    } catch (err) {
      if (apiStatusCode(err) === 404) return false;
      throw unavailable(err);
    }
    return binding.data?.[EK_KEY] === ekPublicKeyHash && binding.data['diskUuid'] === diskUuid;
  }
}

/** A valid object name per pair: the UUID and 16 hex of SHA-256 over the machine id. */
function bindingName(diskUuid: string, machine: string): string {
  return `constellation-disk-${diskUuid}-${createHash('sha256').update(machine).digest('hex').slice(0, 16)}`;
}

function unavailable(err: unknown): Refusal {
  return new Refusal(
    'unavailable',
    'api-unavailable',
    `could not read or record the state-disk binding: ${apiErrorMessage(err)}`,
    { retryAfterMs: 1_000 },
  );
}
