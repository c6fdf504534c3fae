import { createHash } from 'node:crypto';
import type { CoreV1Api } from '@kubernetes/client-node';
import { Refusal } from '@constellation/errors';
import { ClaimRecords } from './claim-records.js';

export interface NodeNameBindingsOptions {
  core: CoreV1Api;
  namespace?: string;
}

const EK_KEY = 'ekPublicKeyHash';
const NAME_KEY = 'nodeName';
const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/** The ConfigMap that records which machine (EK hash) a node name belongs to. */
export function nodeNameBindingName(nodeName: string): string {
  return `constellation-node-name-${sha256(nodeName).slice(0, 32)}`;
}

/** The ConfigMap that records the one node name a machine joined with. */
export function machineNameBindingName(ekPublicKeyHash: string): string {
  return `constellation-machine-name-${sha256(ekPublicKeyHash).slice(0, 32)}`;
}

/**
 * Which machine each node name belongs to, where no registry says it (bare metal): a name goes to
 * the first machine that joins with it, and a machine keeps the one name it first joined with.
 * A kubelet certificate for a name acts as that Node (the node authorizer knows names, not
 * machines), so without this the owner of one genuine machine could take another node's name.
 * Two ConfigMaps per machine, neither secret: machine → name, then name → machine. A name taken
 * by another machine is refused before either is written, so a refused ask claims nothing.
 */
export class NodeNameBindings {
  private readonly records: ClaimRecords;

  constructor(options: NodeNameBindingsOptions) {
    this.records = new ClaimRecords(options.core, options.namespace ?? 'kube-system', 'node-name binding');
  }

  /** Records, or checks, that `nodeName` and the machine belong together; refuses otherwise. */
  async bind(nodeName: string, ekPublicKeyHash: string): Promise<void> {
    const nameRecord = nodeNameBindingName(nodeName);
    const data = { [EK_KEY]: ekPublicKeyHash, [NAME_KEY]: nodeName };
    // A name taken by another machine is refused before anything is written for this one.
    this.checkOwner(nameRecord, nodeName, (await this.records.read(nameRecord))?.[EK_KEY], ekPublicKeyHash);
    const machineRecord = machineNameBindingName(ekPublicKeyHash);
    const { [NAME_KEY]: ownName } = await this.records.claim(machineRecord, data);
    if (ownName !== nodeName) {
      throw new Refusal(
        'denied',
        'name',
        `this machine joined the cluster as "${ownName ?? '?'}" and asked to join as "${nodeName}"; a machine keeps its node name (to give it another, delete ConfigMap ${this.records.namespace}/${machineRecord} and the old name's record)`,
      );
    }
    // Another machine may have taken the name since the check above.
    const { [EK_KEY]: owner } = await this.records.claim(nameRecord, data);
    this.checkOwner(nameRecord, nodeName, owner, ekPublicKeyHash);
  }

  private checkOwner(nameRecord: string, nodeName: string, owner: string | undefined, ekPublicKeyHash: string): void {
    if (owner === undefined || owner === ekPublicKeyHash) return;
    throw new Refusal(
      'denied',
      'name',
      `node name "${nodeName}" belongs to another machine (EK sha256:${owner}); to give it to this one, delete ConfigMap ${this.records.namespace}/${nameRecord}`,
    );
  }
}
