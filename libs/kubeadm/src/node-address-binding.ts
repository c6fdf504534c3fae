import { createHash } from 'node:crypto';
import { isIPv4, isIPv6 } from 'node:net';
import type { CoreV1Api } from '@kubernetes/client-node';
import { Refusal } from '@constellation/errors';
import { ClaimRecords } from './claim-records.js';

export interface NodeAddressBindingsOptions {
  core: CoreV1Api;
  namespace?: string;
}

const EK_KEY = 'ekPublicKeyHash';
const NAME_KEY = 'nodeName';
const ADDRESS_KEY = 'address';

/**
 * One spelling per address: dotted IPv4, IPv6 as RFC 5952 writes it (WHATWG's URL serialiser),
 * and an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) as the IPv4 address, since Go's certificate
 * verifier takes a SAN in either form for the other.
 */
export function canonicalAddress(ip: string): string {
  if (isIPv4(ip)) return ip;
  let host: string | undefined;
  try {
    host = isIPv6(ip) ? new URL(`http://[${ip}]/`).hostname.slice(1, -1) : undefined;
  } catch {
    // a zone index ("%eth0"), which no certificate carries
  }
  if (host === undefined) throw new RangeError(`"${ip}" is not an IP address a certificate can carry`);
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(host);
  if (mapped === null) return host;
  const [high, low] = [parseInt(mapped[1] ?? '0', 16), parseInt(mapped[2] ?? '0', 16)];
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
}

/** The ConfigMap that records which machine (EK hash) an address belongs to. */
export function nodeAddressBindingName(ip: string): string {
  const digest = createHash('sha256').update(canonicalAddress(ip)).digest('hex');
  return `constellation-node-address-${digest.slice(0, 32)}`;
}

/**
 * Which machine each node address belongs to, where no registry says it (bare metal): an address
 * goes to the first machine whose kubelet serving certificate names it. A serving certificate for
 * a neighbour's address lets whoever can take that address on the network (ARP, a stale DHCP
 * lease) answer the API server in the neighbour's place, so the owner of one genuine machine must
 * not get one. A machine may add addresses (a new lease); giving an address to another machine is
 * the operator's decision: delete its record.
 */
export class NodeAddressBindings {
  private readonly records: ClaimRecords;

  constructor(options: NodeAddressBindingsOptions) {
    this.records = new ClaimRecords(options.core, options.namespace ?? 'kube-system', 'node-address binding');
  }

  /** Refuses when another machine holds one of `ips`; writes nothing (check before other claims). */
  async check(ips: readonly string[], ekPublicKeyHash: string): Promise<void> {
    const addresses = [...new Set(ips.map(canonicalAddress))];
    const records = await Promise.all(addresses.map((a) => this.records.read(nodeAddressBindingName(a))));
    addresses.forEach((address, i) => {
      this.checkOwner(address, records[i], ekPublicKeyHash);
    });
  }

  /** Records that `ips` belong to this machine, checking first; refuses any another machine holds. */
  async bind(ips: readonly string[], nodeName: string, ekPublicKeyHash: string): Promise<void> {
    // An address held by another machine is refused before anything is written for this one.
    await this.check(ips, ekPublicKeyHash);
    for (const address of new Set(ips.map(canonicalAddress))) {
      const data = { [EK_KEY]: ekPublicKeyHash, [NAME_KEY]: nodeName, [ADDRESS_KEY]: address };
      // Another machine may have taken the address since the check above.
      this.checkOwner(address, await this.records.claim(nodeAddressBindingName(address), data), ekPublicKeyHash);
    }
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
