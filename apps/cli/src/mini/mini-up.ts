import { randomBytes } from 'node:crypto';
import { appendFile, copyFile, mkdir, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { componentDigest, expectedMeasurements, measureBoot, measurementsToFile } from '@constellation/attestation';
import type { BootComponent } from '@constellation/attestation';
import { UsageError } from '@constellation/command-line';
import { hashInitSecret } from '@constellation/keys';
import { createEkCa, manufactureTpm, startSwtpmProcess } from '@constellation/swtpm';
import type { EkCa } from '@constellation/swtpm';
import { SocketTransport, Tpm } from '@constellation/tpm';
import { configYaml } from '../cluster-config.js';
import { CLI_DEFAULTS } from '../config.js';
import { readClusterState } from '../cluster-state.js';
import { runInit } from '../init-command.js';
import { workspaceFiles, writeWorkspaceFile } from '../workspace.js';
import { findArtifacts } from './artifacts.js';
import type { MiniArtifacts } from './artifacts.js';
import { spawnDetached } from './detached.js';
import { isRunning, miniDir, readMiniState, writeMiniState } from './mini-state.js';
import type { MiniNode, MiniState } from './mini-state.js';
import { lastJoinRefusal } from './join-refusal.js';
import { createNetwork, inNode } from './network.js';
import type { MiniNetwork } from './network.js';
import { freeLoopbackPort } from './ports.js';
import { MINI_OS, publishSignedComponents, signManifest } from './signed-components.js';
import { errorMessage } from '@constellation/errors';

export interface MiniUpOptions {
  workspace: string;
  controlPlanes: number;
  workers: number;
  /** Workers whose bootstrapper bundle is modified (to see a tampered node refused). */
  tamperedWorkers?: number;
  kubernetesVersion?: string;
  /** How long to wait for every node to join. */
  joinTimeoutMs?: number;
  /** Node networking; `auto` uses network namespaces when running as root. */
  network?: 'auto' | 'namespaces' | 'loopback';
  print: (line: string) => void;
}

export interface MiniUpResult {
  nodes: { name: string; role: string; ip: string; state: string; attestation: string }[];
  kubeconfig: string;
  state: string;
  elapsedMs: number;
}

/** The node image's boot chain: a fixed "kernel" and the bootstrapper bundle the node runs. */
async function bootChain(bundle: string): Promise<BootComponent[]> {
  return [
    { pcr: 4, description: 'kernel', digest: componentDigest('constellation mini node image v1') },
    { pcr: 9, description: 'bootstrapper bundle', digest: componentDigest(await readFile(bundle)) },
  ];
}

/**
 * `constellation mini up`: a whole attested cluster on this machine, every node with its own swtpm,
 * LUKS2 state disk, root directory and bootstrapper process, the JoinService started with the
 * DaemonSet's arguments, and `init` run against the first control plane like a user would.
 */
export async function miniUp(options: MiniUpOptions): Promise<MiniUpResult> {
  const started = Date.now();
  const existing = await readMiniState(options.workspace);
  if (
    existing !== undefined &&
    [existing.metadataPid, existing.joinServicePid, ...existing.nodes.map((n) => n.swtpmPid)].some(isRunning)
  ) {
    throw new UsageError(
      `a mini cluster is already running in ${options.workspace} (started ${existing.startedAt}); run \`constellation mini down\` first`,
    );
  }
  if (options.controlPlanes !== 1)
    throw new UsageError('--control-planes: mini supports exactly 1 control plane for now');
  const artifacts = await findArtifacts();
  const dir = miniDir(options.workspace);
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const files = workspaceFiles(options.workspace);
  for (const stale of [files.state, files.kubeconfig, files.masterSecret, files.initSecret])
    await rm(stale, { force: true });

  const boot = await bootChain(artifacts.bootstrapper);
  const measurements = expectedMeasurements(boot, [4, 9, 15]);
  const mode =
    options.network === undefined || options.network === 'auto'
      ? process.getuid?.() === 0
        ? 'namespaces'
        : 'loopback'
      : options.network;
  // In namespaces every node has its own ports, so the real ones are used.
  const apiServerPort = mode === 'namespaces' ? 6443 : await freeLoopbackPort();
  const joinServicePort = mode === 'namespaces' ? 30090 : await freeLoopbackPort();
  const initSecret = randomBytes(32).toString('base64url');
  await writeWorkspaceFile(files.initSecret, initSecret, true);
  const names = [
    ...Array.from({ length: options.controlPlanes }, (_, i) => ({
      name: `control-plane-${i}`,
      role: 'control-plane' as const,
    })),
    ...Array.from({ length: options.workers }, (_, i) => ({ name: `worker-${i + 1}`, role: 'worker' as const })),
  ];
  const network = await createNetwork(mode, names.length);
  const instances = names.map((n, i) => ({ ...n, ip: network.nodeIps[i] ?? '' }));
  const state: MiniState = {
    startedAt: new Date().toISOString(),
    dir,
    metadataPid: 0,
    metadataUrl: '',
    joinServicePid: 0,
    joinServicePort,
    apiServerPort,
    network,
    nodes: [],
  };
  await writeMiniState(options.workspace, state);
  options.print(
    `network: ${mode === 'namespaces' ? `one network namespace per node on bridge ${network.bridge} (${network.hostIp}/24)` : 'loopback addresses (run as root for network namespaces)'}`,
  );
  try {
    return await bringUp(options, artifacts, state, instances, boot, measurements, initSecret, started);
  } catch (err) {
    throw new Error(
      `${errorMessage(err)}\n(the partly started cluster is still there: \`constellation mini down\` removes it)`,
      { cause: err },
    );
  }
}

async function bringUp(
  options: MiniUpOptions,
  artifacts: MiniArtifacts,
  state: MiniState,
  instances: { name: string; role: 'control-plane' | 'worker'; ip: string }[],
  boot: BootComponent[],
  measurements: ReturnType<typeof expectedMeasurements>,
  initSecret: string,
  started: number,
): Promise<MiniUpResult> {
  const { dir, network, apiServerPort, joinServicePort } = state;
  const files = workspaceFiles(options.workspace);
  const controlPlane = instances[0];
  if (controlPlane === undefined) throw new UsageError('--control-planes must be at least 1');
  // Like a cloud: one EK CA per cluster (its keys stay in the workspace, never on a node), every
  // TPM manufactured with an EK certificate from it, and each machine's EK recorded in the registry.
  const ekCa = await createEkCa(join(dir, 'ek-ca'), { name: 'constellation mini' });
  const manufactured = await Promise.all(
    instances.map((instance) =>
      manufactureTpm({ stateDir: join(dir, instance.name, 'tpm'), vmid: instance.name, ca: ekCa }),
    ),
  );
  const registered = instances.map((instance, i) => ({
    ...instance,
    ekPublicKeyHash: manufactured[i]?.ekPublicKeyHash ?? '',
  }));
  options.print(`${instances.length} TPMs manufactured with EK certificates from the cluster's EK CA`);
  const documentFile = join(dir, 'metadata.json');
  await writeFile(
    documentFile,
    JSON.stringify({
      instances: registered,
      endpoint: { host: controlPlane.ip, apiServerPort, joinServicePort, initPort: 0 },
      initSecretHash: await hashInitSecret(Buffer.from(initSecret), { log2N: 14, r: 8, p: 1 }),
    }),
  );
  // Node preparation: the kubeadm stand-in reaches every node as a signed, digest-checked component.
  const kubernetesVersion = options.kubernetesVersion ?? CLI_DEFAULTS.kubernetesVersion;
  const publicKey = await publishSignedComponents(join(dir, 'artifacts'), artifacts.kubeadm, kubernetesVersion);
  const urlFile = join(dir, 'metadata.url');
  state.metadataPid = await spawnDetached(
    process.execPath,
    [
      artifacts.cli,
      'mini',
      'serve-metadata',
      '--document',
      documentFile,
      '--url-file',
      urlFile,
      '--host',
      network.hostIp,
      '--artifacts',
      join(dir, 'artifacts'),
    ],
    join(dir, 'metadata.log'),
  );
  state.metadataUrl = await waitForFile(urlFile, 10_000, 'the metadata server');
  await writeMiniState(options.workspace, state);
  await signManifest(join(dir, 'artifacts'), kubernetesVersion, `${state.metadataUrl}/artifacts`);
  options.print(`metadata server and artifact host (signed component manifest) at ${state.metadataUrl}`);

  const tampered = new Set(
    instances
      .filter((i) => i.role === 'worker')
      .slice(0, options.tamperedWorkers ?? 0)
      .map((i) => i.name),
  );
  for (const [index, instance] of registered.entries()) {
    const node = await startNode(
      artifacts,
      dir,
      network,
      index,
      instance,
      state.metadataUrl,
      apiServerPort,
      boot,
      { publicKey, ekCa },
      tampered.has(instance.name),
    );
    state.nodes.push(node);
    await writeMiniState(options.workspace, state);
    options.print(
      `${instance.name}: swtpm (EK sha256:${node.ekPublicKeyHash.slice(0, 12)}…, unix socket), measured boot, LUKS2 disk, bootstrapper started${node.tampered ? ' (bootstrapper bundle MODIFIED)' : ''}`,
    );
  }

  const cp = state.nodes[0];
  if (cp === undefined) throw new Error('no control plane started');
  await writeWorkspaceFile(
    files.config,
    configYaml({
      name: 'mini',
      kubernetesVersion: options.kubernetesVersion ?? CLI_DEFAULTS.kubernetesVersion,
      initEndpoint: `${cp.ip}:${cp.initPort}`,
      apiServerCertSans: [],
      serviceCidr: '10.96.0.0/12',
      attestation: {
        variant: 'tpm2-ek',
        measurements,
        ekRoots: await readFile(ekCa.rootCertPath, 'utf8'),
        ekIntermediates: await readFile(ekCa.intermediateCertPath, 'utf8'),
      },
    }),
    false,
  );
  options.print(`config with the measured PCRs written to ${files.config}`);
  const init = await runInit({
    workspace: options.workspace,
    print: (line) => {
      options.print(`init: ${line}`);
    },
    retryDelayMs: 300,
    attempts: 20,
  });
  options.print(`cluster ${init.clusterId} initialised`);

  state.joinServicePid = await startJoinService(
    artifacts,
    options.workspace,
    dir,
    network,
    cp,
    joinServicePort,
    apiServerPort,
    measurements,
    ekCa,
    state.metadataUrl,
  );
  await writeMiniState(options.workspace, state);
  options.print(`JoinService serving on ${cp.ip}:${joinServicePort}`);

  const expected = state.nodes.filter((n) => !n.tampered).map((n) => n.name);
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(files.kubeconfig);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const deadline = Date.now() + (options.joinTimeoutMs ?? 120_000);
  let joined: string[] = [];
  while (Date.now() < deadline) {
    joined = (await core.listNode()).items.map((n) => n.metadata?.name ?? '');
    if (expected.every((name) => joined.includes(name))) break;
    const dead = state.nodes.find((n) => !n.tampered && !joined.includes(n.name) && !isRunning(n.bootstrapperPid));
    if (dead !== undefined)
      throw new Error(`${dead.name}'s bootstrapper stopped before joining; see ${join(dead.dir, 'bootstrapper.log')}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const missing = expected.filter((name) => !joined.includes(name));
  if (missing.length > 0)
    throw new Error(`not joined after ${options.joinTimeoutMs ?? 120_000} ms: ${missing.join(', ')} (logs in ${dir})`);
  // Nodes that did not join: report what the JoinService told them (wait a little for a tampered
  // node's first refusal to be logged).
  const refusals = new Map<string, string>();
  for (const node of state.nodes.filter((n) => !joined.includes(n.name))) {
    const until = Date.now() + 20_000;
    let refusal = await lastJoinRefusal(node.dir);
    while (refusal === undefined && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      refusal = await lastJoinRefusal(node.dir);
    }
    refusals.set(node.name, refusal ?? 'no answer from the JoinService yet');
  }
  const nodes = state.nodes.map((n) => ({
    name: n.name,
    role: n.role,
    ip: n.ip,
    state: joined.includes(n.name) ? (n.role === 'control-plane' ? 'initialised' : 'joined') : 'not joined',
    attestation: joined.includes(n.name) ? 'measurements match' : (refusals.get(n.name) ?? ''),
  }));
  return { nodes, kubeconfig: files.kubeconfig, state: files.state, elapsedMs: Date.now() - started };
}

async function startNode(
  artifacts: MiniArtifacts,
  dir: string,
  network: MiniNetwork,
  index: number,
  instance: { name: string; role: 'control-plane' | 'worker'; ip: string; ekPublicKeyHash: string },
  metadataUrl: string,
  apiServerPort: number,
  boot: BootComponent[],
  image: { publicKey: string; ekCa: EkCa },
  tampered: boolean,
): Promise<MiniNode> {
  const nodeDir = join(dir, instance.name);
  await mkdir(join(nodeDir, 'bin'), { recursive: true });
  // A tampered node runs a modified copy of the bootstrapper bundle; its measured boot says so.
  let bundle = artifacts.bootstrapper;
  if (tampered) {
    bundle = join(nodeDir, 'bin', 'bootstrapper.mjs');
    await copyFile(artifacts.bootstrapper, bundle);
    await appendFile(bundle, '\n// modified after the image was measured\n');
  }
  // Unix sockets (mode 0600) in the node's own directory, never TCP: no other node can reset,
  // save or clone this TPM.
  const tpmSocket = join(nodeDir, 'tpm', 'swtpm.sock');
  const swtpm = await startSwtpmProcess({
    stateDir: join(nodeDir, 'tpm'),
    dataSocket: tpmSocket,
    daemon: true,
    pidFile: join(nodeDir, 'tpm', 'swtpm.pid'),
    logFile: join(nodeDir, 'tpm', 'swtpm.log'),
  });
  const tpm = new Tpm(new SocketTransport({ path: tpmSocket }));
  try {
    await measureBoot(
      tpm,
      tampered
        ? [
            ...boot.filter((c) => c.pcr !== 9),
            { pcr: 9, description: 'bootstrapper bundle', digest: componentDigest(await readFile(bundle)) },
          ]
        : boot,
    );
  } finally {
    await tpm.close();
  }
  const disk = join(nodeDir, 'state.img');
  await writeFile(disk, '');
  await truncate(disk, 32 * 1024 * 1024);
  // What the node image carries: OS facts and the vendor's pinned signing key.
  await mkdir(join(nodeDir, 'usr', 'lib'), { recursive: true });
  await writeFile(
    join(nodeDir, 'usr', 'lib', 'os-release'),
    `NAME="constellation mini"\nVERSION_ID=${MINI_OS.version}\nCOREOS_BOARD=${MINI_OS.board}\n`,
  );
  await mkdir(join(nodeDir, 'etc', 'constellation'), { recursive: true });
  await writeFile(join(nodeDir, 'etc', 'constellation', 'pubring.asc'), image.publicKey);
  // The EK CA's certificates are public: the node sends the intermediate with its EK certificate,
  // and checks the JoinService's host against the pinned root before it uses a join ticket.
  const ekIntermediates = join(nodeDir, 'etc', 'constellation', 'ek-intermediates.pem');
  await copyFile(image.ekCa.intermediateCertPath, ekIntermediates);
  const ekRoots = join(nodeDir, 'etc', 'constellation', 'ek-roots.pem');
  await copyFile(image.ekCa.rootCertPath, ekRoots);
  const namespaced = network.mode === 'namespaces';
  const initPort = namespaced ? 9000 : await freeLoopbackPort();
  const recoveryPort = namespaced ? 9999 : await freeLoopbackPort();
  const verifyPort = namespaced ? 30081 : await freeLoopbackPort();
  const [program, args] = inNode(network, index, process.execPath, [
    bundle,
    `--root=${nodeDir}`,
    `--tpm=swtpm:${tpmSocket}`,
    '--attestation-variant=tpm2-ek',
    `--ek-intermediates=${ekIntermediates}`,
    `--ek-roots=${ekRoots}`,
    `--state-disk=${disk}`,
    '--disk-kdf=fast',
    `--metadata-url=${metadataUrl}`,
    `--node-name=${instance.name}`,
    `--init-host=${instance.ip}`,
    `--init-port=${initPort}`,
    `--recovery-port=${recoveryPort}`,
    `--verify-port=${verifyPort}`,
    `--manifest-url=${metadataUrl}/artifacts/manifests/{{.Board}}/{{.OSVersion}}/{{.KubernetesVersion}}.json`,
    `--api-server-bind-port=${apiServerPort}`,
    '--kubelet-start-command=true',
    '--on-fatal=exit',
    // The JoinService starts after init; a short cap keeps waiting workers from sleeping long.
    '--join-backoff-max-ms=2000',
  ]);
  // kubeadm is found on the node's PATH, where node preparation installs it.
  const bootstrapperEnv = {
    KUBEADM_STANDIN_ROOT: nodeDir,
    PATH: `${join(nodeDir, 'run', 'state', 'bin')}:${process.env['PATH'] ?? ''}`,
  };
  const bootstrapperPid = await spawnDetached(program, args, join(nodeDir, 'bootstrapper.log'), {
    ...process.env,
    ...bootstrapperEnv,
  });
  return {
    ...instance,
    dir: nodeDir,
    tpmSocket,
    swtpmPid: swtpm.pid,
    bootstrapperPid,
    initPort,
    recoveryPort,
    verifyPort,
    tampered,
    bootstrapperCommand: [program, ...args],
    bootstrapperEnv,
  };
}

/** The JoinService with the DaemonSet's arguments and the files its volumes would mount. */
async function startJoinService(
  artifacts: MiniArtifacts,
  workspace: string,
  dir: string,
  network: MiniNetwork,
  cp: MiniNode,
  port: number,
  apiServerPort: number,
  measurements: ReturnType<typeof expectedMeasurements>,
  ekCa: EkCa,
  registryUrl: string,
): Promise<number> {
  const files = workspaceFiles(workspace);
  const config = join(dir, 'joinservice', 'config');
  await mkdir(config, { recursive: true });
  await writeFile(join(config, 'attestationConfig'), JSON.stringify(measurementsToFile(measurements)));
  await copyFile(ekCa.rootCertPath, join(config, 'ekRoots'));
  await copyFile(ekCa.intermediateCertPath, join(config, 'ekIntermediates'));
  const state = await readClusterState(files.state);
  if (state === undefined) throw new Error(`init wrote no cluster state at ${files.state}`);
  await writeFile(join(config, 'measurementSalt'), Buffer.from(state.measurementSalt, 'base64'));
  const logFile = join(dir, 'joinservice.log');
  // The JoinService runs on the control-plane node, as its DaemonSet pod would.
  const [program, args] = inNode(network, 0, process.execPath, [
    artifacts.joinservice,
    `--host=${cp.ip}`,
    `--port=${port}`,
    `--metrics-host=${cp.ip}`,
    '--metrics-port=0',
    '--health-port=0',
    `--config-dir=${config}`,
    `--master-secret-file=${files.masterSecret}`,
    `--pki-dir=${join(cp.dir, 'etc', 'kubernetes', 'pki')}`,
    `--kubeconfig=${files.kubeconfig}`,
    `--api-server-endpoint=${cp.ip}:${apiServerPort}`,
    '--attestation-variant=tpm2-ek',
    `--instance-registry-url=${registryUrl}`,
    // The control-plane bootstrapper's agent: how the JoinService proves its host to joining nodes.
    `--attestation-agent=${join(cp.dir, 'run', 'constellation', 'attestation-agent.sock')}`,
  ]);
  const pid = await spawnDetached(program, args, logFile);
  await waitForText(logFile, '"joinservice serving"', 30_000, 'the JoinService');
  return pid;
}

async function waitForFile(path: string, timeoutMs: number, what: string): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const text = (await readFile(path, 'utf8')).trim();
      if (text !== '') return text;
    } catch {
      // not there yet
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`${what} did not start within ${timeoutMs} ms`);
}

async function waitForText(path: string, text: string, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const content = await readFile(path, 'utf8').catch(() => '');
    if (content.includes(text)) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`${what} did not start within ${timeoutMs} ms; see ${path}`);
}
