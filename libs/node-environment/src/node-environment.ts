import { chmod, mkdir, readFile, readdir, readlink, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { inNamespaces, isRunning, runProgram, spawnDetached, waitUntil } from '@constellation/process';
import { errorMessage } from '@constellation/errors';
import { cgroupProcesses, createCgroupRoot, removeCgroupRoot } from './cgroup-root.js';
import { cniConfig, containerdConfig } from './containerd-config.js';
import { kubeletTuning } from './kubelet-tuning.js';
import { MOUNT_NAMESPACE_DIR, createMountNamespace, removeMountNamespace } from './mount-namespace.js';
import type { HostView } from './mount-namespace.js';
import { NODE_BIND_MOUNTS, VOLATILE_DIRS, bindSource, nodeLayout } from './node-layout.js';
import type { NodeLayout } from './node-layout.js';
import { askUnitRunner } from './systemctl.js';
import { containerdUnit, kubeletUnit } from './unit.js';
import type { UnitSpec, UnitsFile } from './unit.js';

export interface NodeEnvironmentOptions {
  /** The node's directory on the host: its bind mounts' sources, logs and units live below it. */
  dir: string;
  name: string;
  /** The node's network namespace (/run/netns/<name>), made beforehand with its address. */
  netns: string;
  /** Every node's name and address, for the node's /etc/hosts. */
  hosts: { name: string; ip: string }[];
  /** This node's pod subnet, and the other nodes' with their addresses (routes between them). */
  podSubnet: string;
  peerPodSubnets: { subnet: string; via: string }[];
  /** The built programs: containerd, its runc shim, ctr, runc. */
  binDir: string;
  /** The pod sandbox image, as kubeadm names it. */
  sandboxImage: string;
  cniBinDir: string;
  /** The kubelet as the node sees it (where node preparation installs it). */
  kubelet: string;
  /** The node image's own units (the bootstrapper), started after containerd and before the kubelet. */
  units: UnitSpec[];
  /** Directories in front of the units' PATH (where node preparation installs programs). */
  path: string[];
  /** The command that runs the unit runner, to which the units file's path is appended. */
  runnerCommand: string[];
  /** The command the node's `systemctl` runs, to which the control socket and systemctl's arguments are appended. */
  systemctlCommand: string[];
  /**
   * Host paths the node sees beside its own directory (HostView): the programs it runs from
   * outside its image, its TPM's socket. Its root has nothing else of the host but the host's
   * programs and configuration, read-only (createMountNamespace).
   */
  hostView?: HostView;
}

/** What is needed to start, stop and remove the node again; kept in the node's directory. */
export interface NodeEnvironment {
  name: string;
  dir: string;
  netns: string;
  /** The persistent mount namespace file. */
  mountNamespace: string;
  /** The node's cgroup root, below every v1 hierarchy. */
  cgroupRoot: string;
  /** The command that runs the node's unit runner (the units file's path is appended). */
  runnerCommand: string[];
  /** The unit runner's pid while the node runs. */
  runnerPid: number;
  /** Host paths the node sees beside its own directory. */
  hostView?: HostView;
}

const inNode = (env: NodeEnvironment, command: readonly string[]): [string, string[]] =>
  inNamespaces({ net: env.netns, mount: env.mountNamespace }, command);

async function writeRecord(layout: NodeLayout, env: NodeEnvironment): Promise<void> {
  await writeFile(layout.record, `${JSON.stringify(env, null, 2)}\n`);
}

export async function readNodeEnvironment(dir: string): Promise<NodeEnvironment | undefined> {
  try {
    return JSON.parse(await readFile(nodeLayout(dir).record, 'utf8')) as NodeEnvironment;
  } catch {
    return undefined;
  }
}

/** The node's /etc/hosts: loopback and every node, so that no node name is looked up in DNS. */
function hostsFile(name: string, hosts: readonly { name: string; ip: string }[]): string {
  return [
    `127.0.0.1 localhost`,
    `::1 localhost`,
    ...hosts.map((h) => `${h.ip} ${h.name}`),
    `# this node: ${name}`,
    '',
  ].join('\n');
}

/**
 * The node's /etc/resolv.conf. The host's resolver is out of the nodes' reach (nothing leaves the
 * machine), and each lookup of a name outside the cluster would wait for it until its timeout. The
 * node names its own address instead, where nothing listens on port 53, so that such lookups are
 * refused at once (configureNetwork lifts the kernel's rate limit on those refusals). The kubelet
 * hands this file to pods with dnsPolicy Default, CoreDNS among them, whose `forward .
 * /etc/resolv.conf` then answers SERVFAIL for outside names; its loop check sees no loop (a
 * nameserver on 127.0.0.1 would be CoreDNS itself, which the loop plugin refuses to run with).
 */
function resolvConfFile(name: string, hosts: readonly { name: string; ip: string }[]): string {
  const self = hosts.find((host) => host.name === name);
  if (self === undefined) throw new Error(`${name} is not among the nodes it is given as hosts`);
  return [
    `# ${name}: no DNS server outside the cluster; CoreDNS answers cluster names`,
    `nameserver ${self.ip}`,
    '',
  ].join('\n');
}

/** sysctls and routes of the node's network namespace: forwarding for its pods, routes to the other nodes' pods. */
async function configureNetwork(options: NodeEnvironmentOptions): Promise<void> {
  const script = [
    'echo 1 > /proc/sys/net/ipv4/ip_forward',
    // kubeadm's preflight wants bridged traffic to pass iptables (the node's own, empty ones).
    'if [ -e /proc/sys/net/bridge/bridge-nf-call-iptables ]; then echo 1 > /proc/sys/net/bridge/bridge-nf-call-iptables; fi',
    // The node's resolv.conf names the node itself, where no DNS server listens: each lookup of a
    // name outside the cluster is to be refused at once. The kernel rate-limits its "port
    // unreachable" answers (icmp_ratelimit); past the limit, lookups waited for their timeout.
    'echo 0 > /proc/sys/net/ipv4/icmp_ratelimit',
    ...options.peerPodSubnets.map((p) => `ip route replace ${p.subnet} via ${p.via}`),
  ];
  await runProgram(...inNamespaces({ net: options.netns }, ['sh', '-ec', script.join('\n')]), {
    timeoutMs: 10_000,
  });
}

async function writeNodeFiles(options: NodeEnvironmentOptions, layout: NodeLayout, cgroupRoot: string): Promise<void> {
  for (const target of NODE_BIND_MOUNTS) await mkdir(bindSource(layout, target), { recursive: true });
  for (const dir of [layout.registryHosts, layout.kubeadmPatches, layout.sbin, layout.logs])
    await mkdir(dir, { recursive: true });
  await mkdir(join(layout.dir, 'units'), { recursive: true, mode: 0o700 });
  await writeFile(layout.hosts, hostsFile(options.name, options.hosts));
  await writeFile(layout.resolvConf, resolvConfFile(options.name, options.hosts));
  await writeFile(
    layout.containerdConfig,
    containerdConfig({
      runc: join(options.binDir, 'runc'),
      sandboxImage: options.sandboxImage,
      cniBinDir: options.cniBinDir,
      optDir: join(layout.dir, 'opt', 'containerd'),
      registryHostsDir: layout.registryHosts,
    }),
  );
  await writeFile(layout.cniConfig, cniConfig(options.podSubnet));
  await writeFile(join(layout.kubeadmPatches, 'kubeletconfiguration+merge.yaml'), kubeletTuning(cgroupRoot));
  const systemctl = join(layout.sbin, 'systemctl');
  const words = [...options.systemctlCommand, layout.unitsSocket].map((w) => `'${w.replaceAll("'", `'\\''`)}'`);
  await writeFile(
    systemctl,
    `#!/bin/sh\n# This node's systemctl: its unit runner answers.\nexec ${words.join(' ')} "$@"\n`,
  );
  await chmod(systemctl, 0o755);
  const units: UnitsFile = {
    socket: layout.unitsSocket,
    logs: layout.logs,
    env: {
      PATH: [
        layout.sbin,
        ...options.path,
        options.binDir,
        '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
      ].join(':'),
      HOME: '/root',
    },
    units: [
      containerdUnit(join(options.binDir, 'containerd'), layout.containerdConfig),
      ...options.units,
      kubeletUnit(options.kubelet),
    ],
  };
  await writeFile(layout.units, `${JSON.stringify(units, null, 2)}\n`, { mode: 0o600 });
}

/**
 * Makes a machine of the node's directory: its files (containerd and CNI configuration, the
 * kubelet's tuning as a kubeadm patch, /etc/hosts, its `systemctl`, its units), its cgroup root,
 * its network settings and its mount namespace. Nothing runs yet: see bootNode.
 */
export async function createNodeEnvironment(options: NodeEnvironmentOptions): Promise<NodeEnvironment> {
  const layout = nodeLayout(options.dir);
  const cgroupRoot = `/constellation-${options.netns}`;
  await writeNodeFiles(options, layout, cgroupRoot);
  await createCgroupRoot(cgroupRoot);
  await configureNetwork(options);
  const env: NodeEnvironment = {
    name: options.name,
    dir: options.dir,
    netns: options.netns,
    mountNamespace: join(MOUNT_NAMESPACE_DIR, `${options.netns}.mnt`),
    cgroupRoot,
    runnerCommand: [...options.runnerCommand],
    runnerPid: 0,
    hostView: environmentView(options),
  };
  await createMountNamespace(env.mountNamespace, bindMounts(layout), nodeView(env));
  await writeRecord(layout, env);
  return env;
}

/**
 * The node's own directory, writable at its place on the host (its programs' paths name it), then
 * what it is shown.
 */
const nodeView = (env: NodeEnvironment): HostView => [{ show: env.dir, writable: true }, ...(env.hostView ?? [])];

/** The programs the environment itself runs (containerd, runc, the CNI plugins), shown read-only, then the caller's view. */
const environmentView = (options: NodeEnvironmentOptions): HostView => [
  { show: options.binDir },
  { show: options.cniBinDir },
  ...(options.hostView ?? []),
];

function bindMounts(layout: NodeLayout): Map<string, string> {
  const binds = new Map<string, string>(NODE_BIND_MOUNTS.map((target) => [target, bindSource(layout, target)]));
  binds.set('/etc/hosts', layout.hosts);
  binds.set('/etc/resolv.conf', layout.resolvConf);
  return binds;
}

const exists = (path: string): Promise<boolean> =>
  stat(path).then(
    () => true,
    () => false,
  );

/** Powers the node on: its unit runner starts in its namespaces and boots containerd, the node's units and the kubelet. */
export async function bootNode(env: NodeEnvironment): Promise<NodeEnvironment> {
  const layout = nodeLayout(env.dir);
  await rm(layout.unitsSocket, { force: true });
  const [program, args] = inNode(env, [...env.runnerCommand, layout.units]);
  const pid = await spawnDetached(program, args, join(layout.logs, 'runner.log'), {
    name: `${env.name}'s unit runner`,
  });
  const booted = { ...env, runnerPid: pid };
  await writeRecord(layout, booted);
  await waitUntil(async () => ((await exists(layout.unitsSocket)) ? true : undefined), {
    timeoutMs: 15_000,
    what: `${env.name}'s unit runner listening`,
    intervalMs: 100,
  }).catch(async (err: unknown) => {
    const tail = (await readFile(join(layout.logs, 'runner.log'), 'utf8').catch(() => '')).split('\n').slice(-6);
    throw new Error(`${errorMessage(err)}\n${tail.join('\n')}`, { cause: err });
  });
  return booted;
}

/** Runs a program in the node's namespaces (ctr, kubeadm, a look around) and returns its output. */
export async function runInNode(
  env: NodeEnvironment,
  command: readonly string[],
  timeoutMs: number,
): Promise<{ stdout: string; stderr: string }> {
  const [program, args] = inNode(env, command);
  return runProgram(program, args, { timeoutMs });
}

/** Processes in the node's mount namespace (its programs and the containers' shims). */
async function namespaceProcesses(mountNamespace: string): Promise<number[]> {
  const inode = await stat(mountNamespace).then(
    (s) => s.ino,
    () => undefined,
  );
  if (inode === undefined) return [];
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const link = await readlink(`/proc/${entry}/ns/mnt`).catch(() => '');
    if (link === `mnt:[${inode}]`) pids.push(Number(entry));
  }
  return pids;
}

/** Every process of the node: its units and shims (mount namespace) and its pods' containers (cgroup root). */
export async function nodeProcesses(env: NodeEnvironment): Promise<number[]> {
  return [...new Set([...(await namespaceProcesses(env.mountNamespace)), ...(await cgroupProcesses(env.cgroupRoot))])];
}

/**
 * Powers the node off: the unit runner stops the units (the kubelet, the node's own, containerd),
 * then whatever is left is killed: the pods' containers in the node's cgroup root and the shims
 * in its mount namespace. The namespace and the node's files stay (see destroyNode). With
 * `powerLoss` every process is killed at once (SIGKILL): what the processes wrote survives, as the
 * host's page cache holds it, but nothing of theirs runs to an end (no clean stop, no last write).
 */
export async function shutdownNode(
  env: NodeEnvironment,
  options: { powerLoss?: boolean; graceMs?: number | undefined } = {},
): Promise<void> {
  // A power loss tells nothing to stop: the runner dies first (it restarts nothing), then the rest.
  if (options.powerLoss === true && env.runnerPid > 0 && isRunning(env.runnerPid))
    process.kill(env.runnerPid, 'SIGKILL');
  if (env.runnerPid > 0 && isRunning(env.runnerPid) && options.powerLoss !== true) {
    process.kill(env.runnerPid, 'SIGTERM');
    await waitUntil(() => Promise.resolve(isRunning(env.runnerPid) ? undefined : true), {
      timeoutMs: options.graceMs ?? 40_000,
      what: `${env.name}'s units stopping`,
      intervalMs: 100,
    }).catch(() => {
      if (isRunning(env.runnerPid)) process.kill(env.runnerPid, 'SIGKILL');
    });
  }
  for (let round = 0; round < 20; round++) {
    const left = [...(await cgroupProcesses(env.cgroupRoot)), ...(await namespaceProcesses(env.mountNamespace))];
    if (left.length === 0) return;
    for (const pid of left) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`processes of ${env.name} are still running after SIGKILL`);
}

/**
 * A reboot's effect on the machine: every mount of the node (state disk, pod volumes, pod network
 * namespaces) is gone, its tmpfs directories are empty and its cgroups are new. (A kubelet that
 * found its pods' old cgroups waited on them and never synced a pod.)
 */
export async function resetForBoot(env: NodeEnvironment): Promise<void> {
  const layout = nodeLayout(env.dir);
  await removeMountNamespace(env.mountNamespace);
  await removeCgroupRoot(env.cgroupRoot);
  await createCgroupRoot(env.cgroupRoot);
  for (const dir of VOLATILE_DIRS) {
    const source = bindSource(layout, dir);
    await rm(source, { recursive: true, force: true });
    await mkdir(source, { recursive: true });
  }
  await createMountNamespace(env.mountNamespace, bindMounts(layout), nodeView(env));
}

/** Stops the node and removes what it had on the host beside its directory: namespace, cgroups. */
export async function destroyNode(env: NodeEnvironment): Promise<void> {
  await shutdownNode(env);
  await removeMountNamespace(env.mountNamespace);
  await removeCgroupRoot(env.cgroupRoot);
}

/** Asks the node's unit runner to start a unit (as `systemctl start` on the node would). */
export async function startUnit(env: NodeEnvironment, unit: string): Promise<void> {
  const answer = await askUnitRunner(nodeLayout(env.dir).unitsSocket, { verb: 'start', unit });
  if (!answer.ok) throw new Error(`${env.name}: cannot start ${unit}: ${answer.message ?? 'no reason given'}`);
}

/** A unit's state on the node (active, inactive, activating, failed), and how it last ended. */
export async function unitState(env: NodeEnvironment, unit: string): Promise<{ state: string; lastExit?: string }> {
  const answer = await askUnitRunner(nodeLayout(env.dir).unitsSocket, { verb: 'status', unit }, 5_000);
  if (!answer.ok) throw new Error(`${env.name}: ${answer.message ?? `no unit ${unit}`}`);
  return { state: answer.state ?? 'unknown', ...(answer.message === undefined ? {} : { lastExit: answer.message }) };
}

/** The log file of a unit of the node. */
export const unitLog = (dir: string, unit: string): string => join(nodeLayout(dir).logs, `${unit}.log`);
