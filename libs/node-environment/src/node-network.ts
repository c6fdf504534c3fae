import { randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { inNamespaces } from '@constellation/process';

/**
 * How a cluster's nodes (mini's, and the tests' machines) reach each other: one Linux network
 * namespace per node with its own address on a bridge, so nodes use the real ports (9000, 6443,
 * 30090) and see each other as separate machines; TPMs and the metadata server stay on the host
 * side of the bridge, like a hypervisor's.
 */
export interface MiniNetwork {
  /** Always `namespaces` now; `loopback` (addresses 127.0.0.x) is read in the states of older CLIs only. */
  mode: 'namespaces' | 'loopback';
  /** Address of the host side: metadata server and TPMs. */
  hostIp: string;
  nodeIps: string[];
  /**
   * Per node: namespace name (namespaces mode). Nodes past the end of this list have an address
   * but no namespace: virtual machines, whose tap devices their provider puts on the bridge.
   */
  namespaces: string[];
  bridge: string;
}

async function ip(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('ip', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.once('error', (e) => {
      reject(new Error(`cannot run ip (install the Debian package iproute2): ${e.message}`));
    });
    child.once('close', (code) => {
      if (code === 0) resolve(out);
      else reject(new Error(`ip ${args.join(' ')} failed: ${err.trim()}`));
    });
  });
}

/** The network for `nodes` nodes; the last `withoutNamespace` of them get an address only (VMs). */
export async function createNetwork(nodes: number, withoutNamespace = 0): Promise<MiniNetwork> {
  const used = await ip(['-o', '-4', 'addr', 'show']);
  const free = Array.from({ length: 250 }, (_, i) => i + 1).filter((n) => !used.includes(`10.42.${n}.`));
  const subnet = free[Math.floor(Math.random() * free.length)];
  if (subnet === undefined) throw new Error('no free 10.42.x.0/24 subnet for the mini network');
  const id = randomBytes(2).toString('hex');
  const network: MiniNetwork = {
    mode: 'namespaces',
    hostIp: `10.42.${subnet}.1`,
    nodeIps: Array.from({ length: nodes }, (_, i) => `10.42.${subnet}.${10 + i}`),
    namespaces: Array.from({ length: Math.max(0, nodes - withoutNamespace) }, (_, i) => `cstl-${id}-${i}`),
    bridge: `cstl${id}`,
  };
  await ip(['link', 'add', network.bridge, 'type', 'bridge']);
  await ip(['addr', 'add', `${network.hostIp}/24`, 'dev', network.bridge]);
  await ip(['link', 'set', network.bridge, 'up']);
  for (const [i, ns] of network.namespaces.entries()) {
    const host = `c${id}h${i}`;
    const peer = `c${id}n${i}`;
    await ip(['netns', 'add', ns]);
    await ip(['link', 'add', host, 'type', 'veth', 'peer', 'name', peer]);
    await ip(['link', 'set', peer, 'netns', ns]);
    await ip(['link', 'set', host, 'master', network.bridge, 'up']);
    await ip(['-n', ns, 'link', 'set', peer, 'name', 'eth0']);
    await ip(['-n', ns, 'addr', 'add', `${network.nodeIps[i] ?? ''}/24`, 'dev', 'eth0']);
    await ip(['-n', ns, 'link', 'set', 'eth0', 'up']);
    await ip(['-n', ns, 'link', 'set', 'lo', 'up']);
    await ip(['-n', ns, 'route', 'add', 'default', 'via', network.hostIp]);
  }
  return network;
}

/** Removes namespaces (their veth ends go with them) and the bridge; missing ones are fine. */
export async function destroyNetwork(network: MiniNetwork | undefined): Promise<void> {
  if (network?.mode !== 'namespaces') return;
  for (const ns of network.namespaces) await ip(['netns', 'del', ns]).catch(() => undefined);
  await ip(['link', 'del', network.bridge]).catch(() => undefined);
}

/**
 * The command line that runs `program args` inside node `index`'s network. nsenter, not
 * `ip netns exec`: the latter remounts /sys, which hides the cgroup mounts from the programs the
 * node starts (the control plane now, the kubelet and runc later).
 */
export function inNode(
  network: MiniNetwork,
  index: number,
  program: string,
  args: readonly string[],
): [string, string[]] {
  const ns = network.namespaces[index];
  return network.mode === 'namespaces' && ns !== undefined
    ? inNamespaces({ net: ns }, [program, ...args])
    : [program, [...args]];
}

/** The nodes' network under a name that is not mini's (the tests' machines use it too). */
export type NodeNetwork = MiniNetwork;
