import { randomBytes } from 'node:crypto';
import { inNamespaces, runProgram } from '@constellation/process';

/**
 * A Linux network namespace of the project's own, linked to the host by one veth pair: the
 * host end has `hostIp`, the namespace's `eth0` has `ip`, both in a /30 of 10.43.0.0/16 (mini's
 * nodes use 10.42.0.0/16). It has no default route, so nothing started in it can reach any
 * address but the host end and its own.
 */
export interface NetworkNamespace {
  readonly name: string;
  readonly ip: string;
  readonly hostIp: string;
}

const ip = (args: readonly string[]): Promise<string> =>
  runProgram('ip', args, { timeoutMs: 10_000 }).then((r) => r.stdout);

/** Creates a namespace with a free /30 of 10.43.0.0/16. Needs root (CAP_NET_ADMIN). */
export async function createNetworkNamespace(): Promise<NetworkNamespace> {
  const used = await ip(['-o', '-4', 'addr', 'show']);
  const usedSubnets = new Set(
    [...used.matchAll(/inet 10\.43\.(\d+)\.(\d+)\//g)].map((m) => `${m[1]}.${Math.floor(Number(m[2]) / 4)}`),
  );
  let subnet: { third: number; block: number } | undefined;
  for (let attempt = 0; attempt < 1000 && subnet === undefined; attempt++) {
    const third = randomBytes(1)[0] ?? 0;
    const block = (randomBytes(1)[0] ?? 0) % 64;
    if (!usedSubnets.has(`${third}.${block}`)) subnet = { third, block };
  }
  if (subnet === undefined) throw new Error('no free /30 in 10.43.0.0/16 for a control-plane network namespace');
  const id = randomBytes(3).toString('hex');
  const base = subnet.block * 4;
  const namespace: NetworkNamespace = {
    name: `cstl-cp-${id}`,
    hostIp: `10.43.${subnet.third}.${base + 1}`,
    ip: `10.43.${subnet.third}.${base + 2}`,
  };
  const hostEnd = `cp${id}h`;
  await ip(['netns', 'add', namespace.name]);
  try {
    await ip(['link', 'add', hostEnd, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', namespace.name]);
    await ip(['addr', 'add', `${namespace.hostIp}/30`, 'dev', hostEnd]);
    await ip(['link', 'set', hostEnd, 'up']);
    await ip(['-n', namespace.name, 'addr', 'add', `${namespace.ip}/30`, 'dev', 'eth0']);
    await ip(['-n', namespace.name, 'link', 'set', 'eth0', 'up']);
    await ip(['-n', namespace.name, 'link', 'set', 'lo', 'up']);
  } catch (error) {
    await deleteNetworkNamespace(namespace);
    throw error;
  }
  return namespace;
}

/** Removes the namespace; its veth pair goes with it. A missing namespace is fine. */
export async function deleteNetworkNamespace(namespace: Pick<NetworkNamespace, 'name'>): Promise<void> {
  await ip(['netns', 'del', namespace.name]).catch(() => undefined);
}

/** The command line that runs `program` inside `namespace`'s network (inNamespaces). */
export function inNetworkNamespace(
  namespace: Pick<NetworkNamespace, 'name'>,
  program: string,
  args: readonly string[],
): [string, string[]] {
  return inNamespaces({ net: namespace.name }, [program, ...args]);
}
