import { readFile } from 'node:fs/promises';
import * as k8s from '@kubernetes/client-node';
import { pooledApiConfiguration } from '@constellation/kubeadm';
import { canConnect } from '@constellation/swtpm';
import { readJoinStatus } from './join-refusal.js';
import { machineOf } from './mini-state.js';
import type { MiniNode, MiniState } from './mini-state.js';
import { BOOTSTRAPPER_UNIT } from './providers/namespace-node.js';
import { WaitAbandoned, waitUntil } from '@constellation/process';

export interface MiniNodeResult {
  name: string;
  role: string;
  ip: string;
  /** initialised / joined / not joined / powered off */
  state: string;
  /** Kubernetes' Ready condition of the node's Node object. */
  ready: boolean;
  attestation: string;
}

/**
 * The file's last `count` lines that say something, each cut at 400 characters, joined by " | ":
 * log entries (JSON) and error headlines; a crash's source excerpt, stack frames and error fields
 * would crowd out the headline and the entries before it.
 */
async function lastTellingLines(path: string, count: number): Promise<string> {
  const text = await readFile(path, 'utf8').catch(() => '');
  const lines = text
    .split('\n')
    // A VM's console prefixes each journal line with the kernel's time and the unit's name and pid.
    .map((line) => line.replace(/^\[\s*[\d.]+\] [\w.@-]+\[\d+\]: /, ''))
    .filter((line) => line.startsWith('{') || /^[A-Za-z]*Error\b/.test(line));
  return lines.length === 0
    ? '(none)'
    : lines
        .slice(-count)
        .map((line) => line.slice(0, 400))
        .join(' | ');
}

/** The first of `nodes` whose bootstrapper unit is no longer running (it failed or exited). */
async function firstStoppedBootstrapper(nodes: readonly MiniNode[]): Promise<MiniNode | undefined> {
  for (const node of nodes) {
    const unit = await machineOf(node).unitState(BOOTSTRAPPER_UNIT);
    if (unit !== undefined && (unit.state === 'failed' || unit.state === 'inactive')) return node;
  }
  return undefined;
}

/** Whether a Node object's Ready condition is True. */
export function nodeReady(node: k8s.V1Node): boolean {
  return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

/**
 * Waits until every honest node is a Ready Node in the API and serves its verify endpoint, failing
 * at once when an honest node's bootstrapper exits before its node is Ready, then reports each
 * machine: joined ones from the API, the others with the refusal their bootstrapper recorded (a
 * tampered node's first refusal may take a moment). Ready is the kubelet's word, and the
 * bootstrapper opens the verify endpoint just after starting the kubelet: without waiting for it,
 * a `constellation verify` run right after `mini up` could find nothing listening.
 */
export async function waitForNodes(options: {
  state: MiniState;
  kubeconfig: string;
  /** Nodes left powered off (mini up --powered-off-workers): neither waited for nor asked why. */
  poweredOff?: ReadonlySet<string>;
  timeoutMs: number;
  /** Progress: each node as it becomes Ready. */
  print?: (line: string) => void;
}): Promise<MiniNodeResult[]> {
  const { state } = options;
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(options.kubeconfig);
  const core = new k8s.CoreV1Api(pooledApiConfiguration(kc)); // polled: one kept-alive connection
  const off = options.poweredOff ?? new Set<string>();
  const expected = state.nodes.filter((n) => !n.tampered && !off.has(n.name)).map((n) => n.name);
  let ready = new Set<string>();
  const verifiable = new Set<string>();
  await waitUntil(
    async () => {
      const items = (await core.listNode()).items;
      const now = new Set(items.filter(nodeReady).map((n) => n.metadata?.name ?? ''));
      for (const name of now) if (!ready.has(name)) options.print?.(`${name}: Ready`);
      ready = now;
      for (const node of state.nodes.filter((n) => ready.has(n.name) && !verifiable.has(n.name))) {
        if (await canConnect({ host: node.ip, port: node.verifyPort })) verifiable.add(node.name);
      }
      if (expected.every((name) => verifiable.has(name))) return true;
      const dead = await firstStoppedBootstrapper(
        state.nodes.filter((n) => !n.tampered && !off.has(n.name) && !ready.has(n.name)),
      );
      if (dead !== undefined) {
        // Its last lines say why; the whole log goes with the workspace at `mini down`.
        const log = machineOf(dead).logPath(BOOTSTRAPPER_UNIT);
        throw new WaitAbandoned(
          `${dead.name}'s bootstrapper stopped before joining; its last log lines: ${await lastTellingLines(log, 3)} (all in ${log})`,
        );
      }
      return undefined;
    },
    { timeoutMs: options.timeoutMs, what: `every node (${expected.join(', ')}) Ready and verifiable`, intervalMs: 250 },
  ).catch((err: unknown) => {
    if (err instanceof WaitAbandoned) throw err;
    const missing = expected
      .filter((name) => !verifiable.has(name))
      .map((name) =>
        ready.has(name) ? `${name} (Ready, but its verify endpoint does not answer)` : `${name} (not Ready)`,
      );
    throw new Error(`not up after ${options.timeoutMs} ms: ${missing.join(', ')} (logs in ${state.dir})`, {
      cause: err,
    });
  });
  const refusals = new Map<string, string>();
  for (const node of state.nodes.filter((n) => !ready.has(n.name) && !off.has(n.name))) {
    const status = await waitUntil(
      async () => {
        const recorded = await readJoinStatus(machineOf(node));
        // A refusal before the point of no return, or a step that failed past it.
        return recorded?.state === 'refused' || recorded?.state === 'failed' ? recorded : undefined;
      },
      { timeoutMs: 20_000, what: `${node.name}'s first refusal` },
    ).catch(() => undefined);
    refusals.set(node.name, status?.message ?? 'no answer from the JoinService yet');
  }
  return state.nodes.map((n) => ({
    name: n.name,
    role: n.role,
    ip: n.ip,
    state: ready.has(n.name)
      ? n === state.nodes[0]
        ? 'initialised'
        : 'joined'
      : off.has(n.name)
        ? 'powered off'
        : 'not joined',
    ready: ready.has(n.name),
    attestation: ready.has(n.name) ? 'measurements match' : (refusals.get(n.name) ?? ''),
  }));
}
