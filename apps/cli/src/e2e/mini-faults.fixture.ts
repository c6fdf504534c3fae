// What the fault tests do to a running mini cluster, from the outside as an operator or a failing
// machine would: the CLI, the built kubectl, a node's own processes and its network namespace.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { openMachineAt } from '@constellation/machines';
import type { Machine } from '@constellation/machines';
import { afterAll, beforeAll } from 'vitest';
import { createTempDir, kubernetesBinDir, repoRoot, runCommand, waitFor } from '@constellation/testing';
import type { TempDir } from '@constellation/testing';
import type { CommandResult } from '@constellation/testing';
import { readJoinStatus } from '../mini/join-refusal.js';
import type { NodeJoinStatus } from '../mini/join-refusal.js';
import type { MiniNode, MiniState } from '../mini/mini-state.js';

const cliBundle = join(repoRoot(), 'apps/cli/dist/constellation.mjs');

/** A mini cluster the fault tests drive: its workspace and the commands they run against it. */
export class FaultCluster {
  constructor(readonly workspace: string) {}

  /** The CLI in this workspace; fails with its output unless it exits 0. */
  async cli(args: readonly string[], timeoutMs = 600_000): Promise<string> {
    const run = await runCommand(process.execPath, [cliBundle, '--workspace', this.workspace, ...args], {
      timeoutMs,
    });
    if (run.code !== 0) throw new Error(`constellation ${args.join(' ')} failed (${String(run.code)}):\n${run.stderr}`);
    return run.stdout.toString();
  }

  /** The built kubectl with the admin kubeconfig; fails with its output unless it exits 0. */
  async kubectl(...args: string[]): Promise<string> {
    const run: CommandResult = await runCommand(
      join(kubernetesBinDir(), 'kubectl'),
      ['--kubeconfig', join(this.workspace, 'constellation-admin.conf'), '--request-timeout=20s', ...args],
      { timeoutMs: 60_000 },
    );
    if (run.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed: ${run.stderr.trim()}`);
    return run.stdout.toString();
  }

  async kubectlJson<T>(...args: string[]): Promise<T> {
    return JSON.parse(await this.kubectl(...args, '-o', 'json')) as T;
  }

  async state(): Promise<MiniState> {
    return JSON.parse(await readFile(join(this.workspace, 'constellation-mini', 'mini.json'), 'utf8')) as MiniState;
  }

  async node(name: string): Promise<MiniNode> {
    const node = (await this.state()).nodes.find((n) => n.name === name);
    if (node === undefined) throw new Error(`the cluster has no node ${name}`);
    return node;
  }

  async machine(name: string): Promise<Machine> {
    const node = await this.node(name);
    const machine = await openMachineAt(node.dir);
    if (machine === undefined) throw new Error(`${name} has no machine in ${node.dir}`);
    return machine;
  }

  async joinStatus(name: string): Promise<NodeJoinStatus | undefined> {
    return readJoinStatus(await this.machine(name));
  }

  /** Waits until the node's bootstrapper records a join state (and step) `accept` takes. */
  async waitForJoinStatus(
    name: string,
    accept: (status: NodeJoinStatus) => boolean,
    description: string,
    timeoutMs = 300_000,
  ): Promise<NodeJoinStatus> {
    return waitFor(
      async () => {
        const status = await this.joinStatus(name);
        return status !== undefined && accept(status) ? status : undefined;
      },
      { timeoutMs, intervalMs: 100, description: `${name}: ${description}` },
    );
  }

  /** The names of the Nodes whose Ready condition is True. */
  async readyNodes(): Promise<string[]> {
    const nodes = await this.kubectlJson<{ items: KubeObject[] }>('get', 'nodes');
    return nodes.items
      .filter((n) => n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true)
      .map((n) => n.metadata.name)
      .sort();
  }

  /**
   * Waits until each node's bootstrapper says `joined`, then until each Node is Ready. In that
   * order: a Node's Ready condition stays True for a while after its kubelet died (a node that lost
   * power mid-join), and the kubelet kubeadm started reports Ready before the bootstrapper's last
   * steps are done.
   */
  async waitForJoined(names: readonly string[], timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (const name of names)
      await this.waitForJoinStatus(name, (s) => s.state === 'joined', 'joined', Math.max(1_000, deadline - Date.now()));
    await this.waitForReady(names, Math.max(1_000, deadline - Date.now()));
  }

  async waitForReady(names: readonly string[], timeoutMs: number): Promise<void> {
    await waitFor(
      async () => {
        const ready = await this.readyNodes();
        return names.every((name) => ready.includes(name));
      },
      { timeoutMs, intervalMs: 1_000, description: `${names.join(', ')} Ready` },
    );
  }

  /** The bootstrap tokens in the cluster now (kubeadm's or anyone's), with the node a description names. */
  async joinTokens(): Promise<JoinToken[]> {
    const secrets = await this.kubectlJson<{ items: KubeObject[] }>(
      'get',
      'secrets',
      '-n',
      'kube-system',
      '--field-selector',
      'type=bootstrap.kubernetes.io/token',
    );
    const decode = (value: string | undefined): string => Buffer.from(value ?? '', 'base64').toString('utf8');
    return secrets.items.map((secret) => ({
      name: secret.metadata.name,
      node: /Bootstrap token for (\S+),/.exec(decode(secret.data?.description))?.[1] ?? '?',
      created: new Date(secret.metadata.creationTimestamp ?? 0),
      expires: new Date(decode(secret.data?.expiration)),
    }));
  }

  /** The host pids of the node's processes whose command name is `command` (etcd, kubelet, node). */
  async processes(name: string, matches: (commandLine: string) => boolean): Promise<number[]> {
    const machine = await this.machine(name);
    const found: number[] = [];
    for (const pid of await machine.hostProcesses()) {
      const commandLine = await readFile(`/proc/${String(pid)}/cmdline`, 'utf8').catch(() => '');
      if (matches(commandLine.split('\0').join(' ').trim())) found.push(pid);
    }
    return found;
  }
}

export interface JoinToken {
  name: string;
  /** The node the description names. */
  node: string;
  created: Date;
  expires: Date;
}

export interface KubeObject {
  metadata: { name: string; creationTimestamp?: string; namespace?: string };
  data?: Record<string, string>;
  status?: {
    conditions?: { type: string; status: string }[];
    containerStatuses?: { name: string; restartCount: number; ready: boolean }[];
  };
}

/** Kills every process `pids` names with SIGKILL (one already gone is fine). */
export function killAll(pids: readonly number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }
}

const MINUTE = 60_000;

/**
 * A mini cluster for the describe block this is called in: brought up before its tests (`mini up`
 * with the run's programs and `upArgs`), and removed after them, files and all, however they ended.
 * Returns the cluster's handle (valid inside the tests).
 */
export function useFaultCluster(prefix: string, upArgs: readonly string[], upTimeoutMs: number): () => FaultCluster {
  let workspace: TempDir | undefined;
  let cluster: FaultCluster | undefined;
  beforeAll(async () => {
    workspace = await createTempDir(prefix);
    const starting = new FaultCluster(workspace.path);
    await starting.cli(['mini', 'up', '--kubernetes-bin-dir', kubernetesBinDir(), ...upArgs], upTimeoutMs);
    cluster = starting;
  }, upTimeoutMs + MINUTE);
  afterAll(async () => {
    if (workspace === undefined) return;
    // Whatever a test left running goes (a failed mini up too), and its files with it.
    await new FaultCluster(workspace.path).cli(['mini', 'down'], 5 * MINUTE);
    await workspace.remove();
  }, 6 * MINUTE);
  return () => {
    if (cluster === undefined) throw new Error(`the ${prefix} cluster did not come up (see beforeAll)`);
    return cluster;
  };
}
