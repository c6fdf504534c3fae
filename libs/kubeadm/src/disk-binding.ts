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
 * Which state disks each machine joined with, as earlier versions recorded it: one ConfigMap per
 * (machine, disk UUID) pair, holding the machine's id (the EK hash) and the UUID, written at every
 * join. Joins now hand out a disk receipt instead (deriveDiskReceipt in @constellation/keys) and
 * write nothing, since those records only grew: a machine joining again and again with made-up
 * UUIDs added one per ticket. A node that joined before shows no receipt, and its record still
 * lets it rejoin.
 */
export class DiskBindings {
  private readonly core: CoreV1Api;
  private readonly namespace: string;

  constructor(options: DiskBindingsOptions) {
    this.core = options.core;
    this.namespace = options.namespace ?? 'kube-system';
  }

  /** At rejoin: this machine must have joined with this disk. */
  async check(diskUuid: string, ekPublicKeyHash: string): Promise<void> {
    if (await this.recorded(diskUuid, ekPublicKeyHash)) return;
    throw new Refusal(
      'denied',
      'disk',
      `this machine showed no disk receipt for state disk ${diskUuid} and no record says it joined with it; a rejoin ticket is only given for a disk the machine joined with`,
    );
  }

  private async recorded(diskUuid: string, ekPublicKeyHash: string): Promise<boolean> {
    let binding: V1ConfigMap;
    try {
      binding = await this.core.readNamespacedConfigMap({
        name: diskBindingName(diskUuid, ekPublicKeyHash),
        namespace: this.namespace,
      });
    } catch (err) {
      if (apiStatusCode(err) === 404) return false;
      throw unavailable(err);
    }
    return binding.data?.[EK_KEY] === ekPublicKeyHash && binding.data['diskUuid'] === diskUuid;
  }
}

/** The record's object name per pair: the UUID and 16 hex of SHA-256 over the machine id. */
export function diskBindingName(diskUuid: string, machine: string): string {
  return `constellation-disk-${diskUuid}-${createHash('sha256').update(machine).digest('hex').slice(0, 16)}`;
}

function unavailable(err: unknown): Refusal {
  return new Refusal(
    'unavailable',
    'api-unavailable',
    `could not read the state-disk record: ${apiErrorMessage(err)}`,
    { retryAfterMs: 1_000 },
  );
}
