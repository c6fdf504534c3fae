import * as grpc from '@grpc/grpc-js';
import type { CoreV1Api, V1ConfigMap } from '@kubernetes/client-node';
import { StatusError } from '@constellation/atls';

export interface DiskBindingsOptions {
  core: CoreV1Api;
  namespace?: string;
}

const codeOf = (err: unknown): number | undefined => (err as { code?: number }).code;
const EK_KEY = 'ekPublicKeyHash';

/**
 * Which machine owns which state disk, as one ConfigMap per disk UUID holding the hash of the EK
 * that first joined with it. Neither value is secret, so the service needs no read access to
 * Secrets. A disk key is derived from the UUID alone, so without this record
 * any attested node could ask for any other node's disk key by naming its UUID. A join records
 * the pair (create, so two joiners cannot both win); a rejoin must present the recorded pair.
 */
export class DiskBindings {
  private readonly core: CoreV1Api;
  private readonly namespace: string;

  constructor(options: DiskBindingsOptions) {
    this.core = options.core;
    this.namespace = options.namespace ?? 'kube-system';
  }

  /** At join: binds `diskUuid` to the EK, or confirms an existing binding to the same EK. */
  async bind(diskUuid: string, ekPublicKeyHash: string, nodeName: string): Promise<void> {
    const body: V1ConfigMap = {
      metadata: {
        name: bindingName(diskUuid),
        namespace: this.namespace,
        labels: { 'app.kubernetes.io/managed-by': 'constellation-joinservice' },
        annotations: { 'constellation.io/node-name': nodeName },
      },
      data: { [EK_KEY]: ekPublicKeyHash, diskUuid },
    };
    try {
      await this.core.createNamespacedConfigMap({ namespace: this.namespace, body });
      return;
    } catch (err) {
      if (codeOf(err) !== 409) throw unavailable(err);
    }
    const owner = await this.owner(diskUuid);
    if (owner !== ekPublicKeyHash) throw otherOwner(diskUuid);
  }

  /** At rejoin: the disk must have been bound to this EK at join. */
  async check(diskUuid: string, ekPublicKeyHash: string): Promise<void> {
    const owner = await this.owner(diskUuid);
    if (owner === undefined) {
      throw new StatusError(
        grpc.status.PERMISSION_DENIED,
        `no node ever joined this cluster with state disk ${diskUuid}; a rejoin ticket is only given for the disk recorded at join`,
        {},
        'disk',
      );
    }
    if (owner !== ekPublicKeyHash) throw otherOwner(diskUuid);
  }

  private async owner(diskUuid: string): Promise<string | undefined> {
    let binding: V1ConfigMap;
    try {
      binding = await this.core.readNamespacedConfigMap({ name: bindingName(diskUuid), namespace: this.namespace });
    } catch (err) {
      if (codeOf(err) === 404) return undefined;
      throw unavailable(err);
    }
    return binding.data?.[EK_KEY];
  }
}

function bindingName(diskUuid: string): string {
  return `constellation-disk-${diskUuid}`;
}

function otherOwner(diskUuid: string): StatusError {
  return new StatusError(
    grpc.status.PERMISSION_DENIED,
    `state disk ${diskUuid} belongs to another node (recorded with a different endorsement key)`,
    {},
    'disk',
  );
}

function unavailable(err: unknown): StatusError {
  return new StatusError(
    grpc.status.UNAVAILABLE,
    `could not read or record the state-disk binding: ${(err as Error).message}`,
    { 'retry-after-ms': '1000' },
    'api-unavailable',
  );
}
