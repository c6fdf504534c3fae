import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { measurementsToFile } from '@constellation/attestation';
import { errorMessage } from '@constellation/errors';
import { ekCaPaths, freePort } from '@constellation/swtpm';
import { loadClusterConfig } from '../constellation-conf.js';
import { readClusterState } from '../cluster-state.js';
import { workspaceFiles } from '../workspace.js';
import type { MiniArtifacts } from './artifacts.js';
import { waitUntil } from './bounded-wait.js';
import { spawnDetached } from './detached.js';
import { isRunning } from './mini-state.js';
import type { MiniNode, MiniState } from './mini-state.js';
import { inNode } from './network.js';

/** Where a control plane's JoinService runs; written next to the node once it serves. */
export interface NodeJoinService {
  pid: number;
  host: string;
  port: number;
  metricsPort: number;
}

const recordPath = (node: MiniNode): string => join(node.dir, 'joinservice.json');
export const joinServiceLog = (node: MiniNode): string => join(node.dir, 'joinservice.log');

export async function readNodeJoinService(node: MiniNode): Promise<NodeJoinService | undefined> {
  try {
    return JSON.parse(await readFile(recordPath(node), 'utf8')) as NodeJoinService;
  } catch {
    return undefined;
  }
}

/** The join-config files the DaemonSet mounts, from the workspace (as the init node publishes them). */
async function joinConfig(workspace: string, state: MiniState, node: MiniNode): Promise<string> {
  const files = workspaceFiles(workspace);
  const config = join(node.dir, 'joinservice', 'config');
  await mkdir(config, { recursive: true });
  const clusterConfig = await loadClusterConfig(files.config);
  await writeFile(
    join(config, 'attestationConfig'),
    JSON.stringify(measurementsToFile(clusterConfig.attestation.measurements)),
  );
  const ekCa = ekCaPaths(join(state.dir, 'ek-ca'));
  await copyFile(ekCa.rootCertPath, join(config, 'ekRoots'));
  await copyFile(ekCa.intermediateCertPath, join(config, 'ekIntermediates'));
  const cluster = await readClusterState(files.state);
  if (cluster === undefined) throw new Error(`no cluster state at ${files.state}: init has not finished`);
  await writeFile(join(config, 'measurementSalt'), Buffer.from(cluster.measurementSalt, 'base64'));
  return config;
}

async function healthy(url: string): Promise<true | undefined> {
  const res = await fetch(url, { signal: AbortSignal.timeout(1_000) });
  return res.ok ? true : undefined;
}

/**
 * Starts the JoinService on a control-plane node, as its DaemonSet pod would run there: in the
 * node's network namespace, with the node's PKI, the mounted join-config and the node's attestation
 * agent. Ready when its /healthz answers. Does nothing when one already runs for the node.
 */
export async function startNodeJoinService(options: {
  workspace: string;
  state: MiniState;
  node: MiniNode;
  artifacts: MiniArtifacts;
  /** The cluster's API endpoint (host:port). */
  apiServerEndpoint: string;
}): Promise<NodeJoinService> {
  const { workspace, state, node, artifacts } = options;
  const running = await readNodeJoinService(node);
  if (running !== undefined && isRunning(running.pid)) return running;
  const files = workspaceFiles(workspace);
  // Never the admin kubeconfig: the JoinService gets exactly its service account's rights.
  const kubeconfig = state.joinServiceKubeconfig;
  if (kubeconfig === undefined)
    throw new Error(`no service-account credential for the JoinService in ${state.dir}: mini up did not finish`);
  const config = await joinConfig(workspace, state, node);
  const index = state.nodes.findIndex((n) => n.name === node.name);
  const namespaced = state.network.mode === 'namespaces';
  const metricsPort = namespaced ? 9091 : await freePort(node.ip);
  const [program, args] = inNode(state.network, index, process.execPath, [
    artifacts.joinservice,
    `--host=${node.ip}`,
    `--port=${state.joinServicePort}`,
    `--metrics-host=${node.ip}`,
    `--metrics-port=${metricsPort}`,
    '--health-port=0',
    `--config-dir=${config}`,
    `--master-secret-file=${files.masterSecret}`,
    `--pki-dir=${join(node.dir, 'etc', 'kubernetes', 'pki')}`,
    `--kubeconfig=${kubeconfig}`,
    `--api-server-endpoint=${options.apiServerEndpoint}`,
    '--attestation-variant=tpm2-ek',
    `--instance-registry-url=${state.metadataUrl}`,
    // The control-plane bootstrapper's agent: how the JoinService proves its host to joining nodes.
    `--attestation-agent=${join(node.dir, 'run', 'constellation', 'attestation-agent.sock')}`,
  ]);
  const pid = await spawnDetached(program, args, joinServiceLog(node));
  const service: NodeJoinService = { pid, host: node.ip, port: state.joinServicePort, metricsPort };
  await writeFile(recordPath(node), `${JSON.stringify(service)}\n`);
  await waitUntil(
    async () => {
      if (!isRunning(pid)) throw new Error(`the JoinService on ${node.name} exited; see ${joinServiceLog(node)}`);
      return healthy(`http://${node.ip}:${metricsPort}/healthz`);
    },
    { timeoutMs: 30_000, what: `the JoinService on ${node.name} answering /healthz` },
  ).catch(async (err: unknown) => {
    const log = await readFile(joinServiceLog(node), 'utf8').catch(() => '');
    throw new Error(`${errorMessage(err)}${log === '' ? '' : `\n${log.split('\n').slice(-5).join('\n')}`}`, {
      cause: err,
    });
  });
  return service;
}
