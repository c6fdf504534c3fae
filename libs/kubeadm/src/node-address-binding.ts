import { createHash } from 'node:crypto';
import type { CoreV1Api } from '@kubernetes/client-node';
import { Refusal } from '@constellation/errors';
import { canonicalAddress } from './canonical-address.js';
import { ClaimRecords } from './claim-records.js';

export interface NodeAddressBindingsOptions {
  core: CoreV1Api;
  namespace?: string;
  /** How many addresses one machine may hold (8). */
  maxPerMachine?: number;
}

const EK_KEY = 'ekPublicKeyHash';
const NAME_KEY = 'nodeName';
const ADDRESS_KEY = 'address';

/** The ConfigMap that records which machine (EK hash) an address belongs to. */
export function nodeAddressBindingName(ip: string): string {
  const digest = createHash('sha256').update(canonicalAddress(ip)).digest('hex');
  return `constellation-node-address-${digest.slice(0, 32)}`;
}

/** The ConfigMap holding the `slot`-th address a machine holds (bounded: see NodeAddressBindings). */
export function machineAddressSlotName(ekPublicKeyHash: string, slot: number): string {
  return `${machineAddressSlotPrefix(ekPublicKeyHash)}-${String(slot)}`;
}

function machineAddressSlotPrefix(ekPublicKeyHash: string): string {
  return `constellation-machine-address-${createHash('sha256').update(ekPublicKeyHash).digest('hex').slice(0, 32)}`;
}

/** What `NodeAddressBindings.check` found: the machine, and the addresses it does not hold yet. */
export interface CheckedAddresses {
  readonly ekPublicKeyHash: string;
  readonly fresh: readonly string[];
}

/**
 * Which machine each node address belongs to, where no registry says it (bare metal): an address
 * goes to the first machine whose kubelet serving certificate names it. A serving certificate for
 * a neighbour's address lets whoever can take that address on the network (ARP, a stale DHCP
 * lease) answer the API server in the neighbour's place, so the owner of one genuine machine must
 * not get one. A machine may add addresses (a new lease), up to `maxPerMachine`: each it holds
 * takes one of its numbered slot records first, so the owner of one machine cannot reserve a
 * subnet and lock every later machine out of it. Giving an address to another machine is the
 * operator's decision: delete its records.
 */
export class NodeAddressBindings {
  private readonly records: ClaimRecords;
  private readonly maxPerMachine: number;

  constructor(options: NodeAddressBindingsOptions) {
    this.records = new ClaimRecords(options.core, options.namespace ?? 'kube-system', 'node-address binding');
    this.maxPerMachine = options.maxPerMachine ?? 8;
  }

  /**
   * Refuses when another machine holds one of `ips`, or when they are too many; writes nothing.
   * The result says which addresses this machine does not hold yet, for `record`.
   */
  async check(ips: readonly string[], ekPublicKeyHash: string): Promise<CheckedAddresses> {
    const addresses = [...new Set(ips.map(canonicalAddress))];
    if (addresses.length > this.maxPerMachine) {
      throw new Refusal(
        'denied',
        'address',
        `the kubelet serving certificate request names ${String(addresses.length)} addresses; a machine holds at most ${String(this.maxPerMachine)}`,
      );
    }
    const records = await Promise.all(addresses.map((a) => this.records.read(nodeAddressBindingName(a))));
    addresses.forEach((address, i) => {
      this.checkOwner(address, records[i], ekPublicKeyHash);
    });
    return { ekPublicKeyHash, fresh: addresses.filter((_, i) => records[i] === undefined) };
  }

  /**
   * Records the addresses a check found free as this machine's; refuses any another machine took
   * since. A caller with other claims to check first (a node name) checks, claims those, then records.
   */
  async record({ ekPublicKeyHash, fresh }: CheckedAddresses, nodeName: string): Promise<void> {
    for (const address of fresh) {
      const data = { [EK_KEY]: ekPublicKeyHash, [NAME_KEY]: nodeName, [ADDRESS_KEY]: address };
      await this.takeSlot(data);
      // Another machine may have taken the address since the check.
      this.checkOwner(address, await this.records.claim(nodeAddressBindingName(address), data), ekPublicKeyHash);
    }
  }

  /** Records that `ips` belong to this machine, checking first; refuses any another machine holds. */
  async bind(ips: readonly string[], nodeName: string, ekPublicKeyHash: string): Promise<void> {
    // An address held by another machine is refused before anything is written for this one.
    await this.record(await this.check(ips, ekPublicKeyHash), nodeName);
  }

  /** The first of the machine's slots that is free or already holds this address; refuses when none is. */
  private async takeSlot(data: Record<string, string>): Promise<void> {
    const { [EK_KEY]: machine = '', [ADDRESS_KEY]: address } = data;
    const held: string[] = [];
    for (let slot = 0; slot < this.maxPerMachine; slot++) {
      const { [ADDRESS_KEY]: holds = '?' } = await this.records.claim(machineAddressSlotName(machine, slot), data);
      if (holds === address) return;
      held.push(holds);
    }
    throw new Refusal(
      'denied',
      'address',
      `this machine already holds ${String(held.length)} addresses (${held.join(', ')}); to give it another, delete one of ConfigMaps ${this.records.namespace}/${machineAddressSlotPrefix(machine)}-0 to -${String(this.maxPerMachine - 1)} (each names its address) and that address's record`,
    );
  }

  private checkOwner(address: string, record: Record<string, string> | undefined, ekPublicKeyHash: string): void {
    const owner = record?.[EK_KEY];
    if (owner === undefined || owner === ekPublicKeyHash) return;
    throw new Refusal(
      'denied',
      'address',
      `address ${address} belongs to another machine (EK sha256:${owner}, node "${record?.[NAME_KEY] ?? '?'}"); to give it to this one, delete ConfigMap ${this.records.namespace}/${nodeAddressBindingName(address)}`,
    );
  }
}
