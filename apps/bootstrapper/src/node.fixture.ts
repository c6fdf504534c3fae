// Test fixture: machines for the bootstrapper. Each has a real swtpm (measured boot), a LUKS2
// image file and its own root directory; all share an instance metadata server, on the host end of
// the nodes' network (one network namespace per node on a bridge, as in mini). The bootstrapper
// code under test is exactly the product code, run in the test's process so that the tests can
// look at its lock, TPM, disk and log and make its steps fail. A node that runs kubeadm has a real
// machine below it (test-machine.fixture.ts): its namespaces, containerd and kubelet, and the real
// kubeadm with the node image's settings, so its control plane runs as static pods.
import { randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { copyFile, mkdir, readFile, truncate, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type * as grpc from '@grpc/grpc-js';
import { AttestedChannelCredentials, proveServerIdentity } from '@constellation/atls';
import {
  EkIdentityVerifier,
  TpmIssuer,
  TpmValidator,
  componentDigest,
  expectedMeasurements,
  measureBoot,
  measurementsToFile,
  pemCertificatesToDer,
} from '@constellation/attestation';
import type { BootComponent, Measurements, VerifiedTpmIdentity } from '@constellation/attestation';
import { hashInitSecret, masterSecretToJson } from '@constellation/keys';
import { MemoryLogger } from '@constellation/logger/testing';
import { NodeLock } from '@constellation/nodelock';
import { InitServiceClient, RecoveryServiceClient, grpcMessageLimits } from '@constellation/proto';
import type { InitRequest, InitResponse } from '@constellation/proto';
import { MetadataServer } from '@constellation/instance-metadata';
import type { InstanceInfo } from '@constellation/instance-metadata';
import { API_SERVER_PORT } from '@constellation/control-plane';
import { createNetwork, destroyNetwork, inNode } from '@constellation/node-environment';
import type { NodeNetwork } from '@constellation/node-environment';
import { StateDisk } from '@constellation/state-disk';
import { createEkCa } from '@constellation/swtpm';
import type { EkCa } from '@constellation/swtpm';
import {
  createTempDir,
  freePort,
  repoRoot,
  sharedKubernetes,
  startSwtpm,
  waitFor,
  withTimeout,
} from '@constellation/testing';
import type { Swtpm, TempDir } from '@constellation/testing';
import { SocketTransport, SwtpmControl, Tpm } from '@constellation/tpm';
import { serveAgentOnControlPlane } from './attestation-agent.js';
import { Bootstrapper } from './bootstrapper.js';
import type { BootstrapOutcome, BootstrapperOptions } from './bootstrapper.js';
import type { NodeContext } from './node-context.js';
import { joinServiceCheck } from './join-service-check.js';
import { MetadataClient } from './metadata-client.js';
import { nodePaths } from './node-paths.js';
import { RecentLog } from './recent-log.js';
import { startTestMachine } from './test-machine.fixture.js';
import type { TestMachine } from './test-machine.fixture.js';
import type { KubeProxyFields } from '@constellation/kubeadm';

export const BOOT: BootComponent[] = [
  { pcr: 4, description: 'kernel', digest: componentDigest('kernel v1') },
  { pcr: 9, description: 'bootstrapper bundle', digest: componentDigest('bootstrapper bundle v1') },
];
export const MEASUREMENTS: Measurements = expectedMeasurements(BOOT, [4, 9, 15]);
export const INIT_SECRET = Buffer.from('mini-init-secret-0123456789');

/** The Kubernetes release the built programs are (what the tests' init requests and nodes use). */
export const kubernetesRelease = (): string => sharedKubernetes().release;

/** A machine of a test cluster; one without an address gets its network namespace's. */
export type TestInstance = Omit<InstanceInfo, 'ip'> & { ip?: string };

export interface Cluster {
  metadata: MetadataServer;
  /** The nodes' network: a namespace per instance, in the order given, on a bridge with the host. */
  network: NodeNetwork;
  /** Every instance as the metadata server lists it, with its address. */
  instances: InstanceInfo[];
  dir: TempDir;
  /** The per-cluster EK CA that manufactures every node's TPM. */
  ekCa: EkCa;
  /** What the CLI pins: the EK CA's root. */
  ekVerifier: EkIdentityVerifier;
  apiServerPort: number;
  joinServicePort: number;
  /** The machines started for this cluster's nodes: close() removes those a test left behind. */
  machines: Set<TestMachine>;
  close(): Promise<void>;
}

/** The address of the instance `name` (its network namespace's unless the test gave one). */
export function instanceIp(cluster: Cluster, name: string): string {
  const instance = cluster.instances.find((i) => i.name === name);
  if (instance === undefined) throw new Error(`no instance ${name} in the test cluster`);
  return instance.ip;
}

export async function startCluster(machines: TestInstance[]): Promise<Cluster> {
  const dir = await createTempDir('constellation-cluster-');
  const network = await createNetwork(machines.length);
  try {
    // The control plane's port in its own namespace: kubeadm's.
    const apiServerPort = API_SERVER_PORT;
    const joinServicePort = await freePort();
    const instances: InstanceInfo[] = machines.map((m, i) => ({ ...m, ip: m.ip ?? network.nodeIps[i] ?? '' }));
    const controlPlane = instances.find((i) => i.role === 'control-plane');
    // On the host end of the bridge: reachable from the host and from every node's namespace.
    const metadata = await MetadataServer.start(
      {
        instances,
        endpoint: { host: controlPlane?.ip ?? network.hostIp, apiServerPort, joinServicePort, initPort: 0 },
        initSecretHash: await hashInitSecret(INIT_SECRET, { log2N: 10, r: 8, p: 1 }),
      },
      0,
      network.hostIp,
    );
    const ekCa = await createEkCa(join(dir.path, 'ek-ca'), { name: 'Bootstrapper test' });
    const roots = pemCertificatesToDer(await readFile(ekCa.rootCertPath, 'utf8'));
    const machinesStarted = new Set<TestMachine>();
    return {
      metadata,
      network,
      instances,
      dir,
      ekCa,
      ekVerifier: new EkIdentityVerifier({ roots }),
      apiServerPort,
      joinServicePort,
      machines: machinesStarted,
      close: async () => {
        for (const machine of machinesStarted) await machine.destroy();
        machinesStarted.clear();
        await metadata.close();
        await destroyNetwork(network);
        await dir.remove();
      },
    };
  } catch (err) {
    await destroyNetwork(network);
    await dir.remove();
    throw err;
  }
}

export class TestNode {
  readonly logger: MemoryLogger;
  readonly context: NodeContext;
  readonly swtpm: Swtpm;
  readonly root: string;
  /** How clients of this node (the CLI) check its TPM identity: the cluster's pinned EK root. */
  readonly ekVerifier: EkIdentityVerifier;
  /** The node's machine, for a node created with `machine: true`. */
  readonly machine: TestMachine | undefined;
  kubeletStarts = 0;
  fatalErrors: Error[] = [];
  initPort = 0;
  recoveryPort = 0;
  /** The node's name (its root directory's). */
  get name(): string {
    return basename(this.root);
  }

  /** Ends the starts of this node's bootstrappers that have not passed the point of no return. */
  private readonly stopping = new AbortController();
  private readonly cluster: Cluster;

  private constructor(
    context: NodeContext,
    logger: MemoryLogger,
    swtpm: Swtpm,
    root: string,
    cluster: Cluster,
    machine: TestMachine | undefined,
  ) {
    this.context = context;
    this.logger = logger;
    this.swtpm = swtpm;
    this.root = root;
    this.cluster = cluster;
    this.ekVerifier = cluster.ekVerifier;
    this.machine = machine;
  }

  /**
   * A node of `cluster`. With `machine: true` it has a real machine below the bootstrapper, which
   * kubeadm and the kubelet need; without one, a kubeadm run fails saying so (the tests that never
   * get that far, or give their own `kubeadm`, spare the machine's start).
   */
  static async create(
    cluster: Cluster,
    name: string,
    options: {
      boot?: BootComponent[];
      kubeadm?: string;
      /** Start the node's machine: namespaces, containerd, the real kubeadm and kubelet. */
      machine?: boolean;
      apiServerBindPort?: number;
      /** Attest with the qemu-vtpm variant: quotes only, no EK identity (and no JoinService check). */
      unrooted?: boolean;
      /** The node image's `--minimum-kubernetes-version`. */
      minimumKubernetesVersion?: string;
      /** The node image's `--kube-proxy-config` fields (with a machine). */
      kubeProxyConfig?: KubeProxyFields;
    } = {},
  ): Promise<TestNode> {
    const root = join(cluster.dir.path, name);
    const index = cluster.instances.findIndex((i) => i.name === name);
    const instance = cluster.instances[index];
    if (instance === undefined) throw new Error(`no instance ${name} in the test cluster`);
    const swtpm = await startSwtpm({ stateDir: join(root, 'tpm'), manufacture: { ca: cluster.ekCa, vmid: name } });
    let machine: TestMachine | undefined;
    let tpm: Tpm | undefined;
    try {
      if (options.machine === true) {
        machine = await startTestMachine({
          root,
          name,
          role: instance.role,
          network: cluster.network,
          index,
          hosts: cluster.instances.map((i) => ({ name: i.name, ip: i.ip })),
        });
        cluster.machines.add(machine);
      }
      tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port, keepConnection: true }));
      return await TestNode.assemble(cluster, name, root, swtpm, tpm, machine, options);
    } catch (err) {
      await tpm?.close();
      if (machine !== undefined) {
        cluster.machines.delete(machine);
        await machine.destroy();
      }
      await swtpm.stop();
      throw err;
    }
  }

  private static async assemble(
    cluster: Cluster,
    name: string,
    root: string,
    swtpm: Swtpm,
    tpm: Tpm,
    machine: TestMachine | undefined,
    options: Parameters<typeof TestNode.create>[2] & object,
  ): Promise<TestNode> {
    const events = await measureBoot(tpm, options.boot ?? BOOT);
    // The platform records the machine's EK when it provisions it.
    const ekPublicKeyHash = swtpm.manufactured?.ekPublicKeyHash ?? '';
    cluster.metadata.update((doc) => ({
      ...doc,
      instances: doc.instances.map((i) => (i.name === name ? { ...i, ekPublicKeyHash } : i)),
    }));
    const issuer =
      options.unrooted === true
        ? new TpmIssuer(tpm, { eventLog: () => events })
        : await TpmIssuer.rooted(tpm, {
            eventLog: () => events,
            ekIntermediates: pemCertificatesToDer(await readFile(cluster.ekCa.intermediateCertPath, 'utf8')),
          });
    const image = join(root, 'state.img');
    await writeFile(image, '');
    await truncate(image, 32 * 1024 * 1024);
    const kubeadm = options.kubeadm ?? machine?.kubeadm ?? (await noMachineKubeadm(root));
    const recentLog = new RecentLog();
    const logger = new MemoryLogger();
    const metadata = new MetadataClient(cluster.metadata.url, name);
    const check =
      options.unrooted === true
        ? undefined
        : await joinServiceCheck({
            tpm,
            metadata,
            ekRoots: pemCertificatesToDer(await readFile(cluster.ekCa.rootCertPath, 'utf8')),
            measuredPcrs: [4, 9],
            logger,
          });
    const node: TestNode = new TestNode(
      {
        paths: nodePaths(root),
        tpm,
        issuer,
        disk: new StateDisk({ device: image, kdf: 'fast', keyDir: dirname(nodePaths(root).initialDiskKey) }),
        lock: new NodeLock(tpm),
        metadata,
        ...(check === undefined ? {} : { joinServiceCheck: check }),
        logger,
        recentLog,
        // The real kubeadm init starts the control plane as static pods (about 10 to 30 s on a
        // busy 2-core machine), with the node image's settings, as mini's bootstrapper flags set them.
        kubeadm: {
          program: kubeadm,
          env: process.env,
          timeoutMs: 150_000,
          ...(machine === undefined
            ? {}
            : {
                node: {
                  ...machine.kubeadmNode,
                  ...(options.kubeProxyConfig === undefined ? {} : { kubeProxy: options.kubeProxyConfig }),
                },
              }),
        },
        apiServerBindPort: options.apiServerBindPort ?? cluster.apiServerPort,
        defaultKubernetesVersion: kubernetesRelease(),
        ...(options.minimumKubernetesVersion === undefined
          ? {}
          : { minimumKubernetesVersion: options.minimumKubernetesVersion }),
        // systemctl start kubelet on the machine, counted.
        startKubelet: async () => {
          node.kubeletStarts++;
          await machine?.startKubelet();
        },
      },
      logger,
      swtpm,
      root,
      cluster,
      machine,
    );
    return node;
  }

  bootstrapper(overrides: Partial<BootstrapperOptions> = {}): Bootstrapper {
    return new Bootstrapper(this.context, {
      initHost: '127.0.0.1',
      initPort: 0,
      recoveryPort: 0,
      joinInitialBackoffMs: 50,
      joinMaxBackoffMs: 300,
      requestTimeoutMs: 15_000,
      fatal: (err) => {
        this.fatalErrors.push(err);
        return Promise.resolve();
      },
      onListening: (server, port) => {
        if (server === 'init') this.initPort = port;
        else this.recoveryPort = port;
      },
      signal: this.stopping.signal,
      ...overrides,
    });
  }

  /**
   * A client of this node's RecoveryServer, connected as the CLI connects: the node's
   * measurements checked in the handshake, then its TPM's identity proved.
   */
  async recoveryClient(): Promise<{ client: RecoveryServiceClient; identity: VerifiedTpmIdentity }> {
    const credentials = new AttestedChannelCredentials([new TpmValidator({ measurements: MEASUREMENTS })]);
    const client = new RecoveryServiceClient(
      `127.0.0.1:${String(this.recoveryPort)}`,
      credentials.credentials,
      credentials.channelOptions,
    );
    try {
      return { client, identity: await proveServerIdentity(client.getChannel(), credentials, this.ekVerifier) };
    } catch (err) {
      client.close();
      throw err;
    }
  }

  /** Runs the bootstrapper and initialises the cluster on this node with `request` (bounded). */
  async initialise(request: InitRequest): Promise<void> {
    const outcome = this.bootstrapper().run();
    await waitFor(() => this.initPort > 0, { timeoutMs: 20_000, description: 'the InitServer' });
    const { error } = await callInit(this, request);
    if (error !== undefined) throw new Error(`init failed: ${JSON.stringify(error)}`);
    const ended = await withTimeout(outcome, 30_000, 'init outcome');
    if (ended !== 'initialized') throw new Error(`the bootstrapper ended ${ended}, not initialized`);
  }

  /**
   * Reboots the node: its machine (when it has one) is powered off and on (units, containers and
   * mounts go; containerd starts again, the kubelet waits for the bootstrapper), its TPM is power
   * cycled (PCRs back to zero) and the measured boot replayed. `machine: false` power-cycles the
   * TPM alone, for a test whose JoinService stands for a peer control plane's and needs this
   * node's API server to keep answering.
   */
  async reboot(options: { machine?: boolean } = {}): Promise<void> {
    if (options.machine !== false) await this.machine?.reboot();
    await new SwtpmControl(this.swtpm.host, this.swtpm.ctrlPort).reset();
    await this.context.tpm.startup();
    await measureBoot(this.context.tpm, BOOT);
    this.context.lock = new NodeLock(this.context.tpm);
    this.kubeletStarts = 0;
  }

  async stop(): Promise<void> {
    // A bootstrapper still serving Init and polling the JoinService would outlive the test.
    this.stopping.abort();
    if (this.machine !== undefined) {
      this.cluster.machines.delete(this.machine);
      await this.machine.destroy();
    }
    await this.context.tpm.close();
    await this.swtpm.stop();
  }
}

/** kubeadm of a node without a machine: a run fails, naming what is missing. */
async function noMachineKubeadm(root: string): Promise<string> {
  const program = join(root, 'bin', 'kubeadm');
  await mkdir(dirname(program), { recursive: true });
  await writeFile(
    program,
    '#!/bin/sh\necho "this test node has no machine to run kubeadm on (TestNode.create with machine: true)" >&2\nexit 1\n',
    { mode: 0o755 },
  );
  return program;
}

export function initRequest(overrides: Partial<InitRequest> = {}): InitRequest {
  return {
    initSecret: INIT_SECRET,
    masterSecret: randomBytes(32),
    masterSalt: randomBytes(32),
    measurementSalt: randomBytes(32),
    kubernetesVersion: kubernetesRelease(),
    kubernetesComponents: [],
    clusterName: 'mini',
    apiserverCertSans: [],
    serviceCidr: '',
    conformanceMode: false,
    ...overrides,
  };
}

/**
 * Calls Init over server-attested TLS like the CLI does: the handshake checks the quotes, then the
 * node proves its EK identity by credential activation, and only then is the request sent.
 * Collects the stream and its final status.
 */
export async function callInit(
  node: TestNode,
  request: InitRequest,
  measurements: Measurements = MEASUREMENTS,
): Promise<{
  messages: InitResponse[];
  error?: grpc.ServiceError;
  identityError?: unknown;
  credentials: AttestedChannelCredentials;
}> {
  // As the CLI does: an unrooted node is checked by its quotes alone (it proves no identity).
  const unrooted = node.context.issuer.rooted === undefined;
  const credentials = new AttestedChannelCredentials([
    new TpmValidator({ measurements, variant: unrooted ? 'qemu-vtpm' : 'tpm2-ek' }),
  ]);
  const client = new InitServiceClient(`127.0.0.1:${node.initPort}`, credentials.credentials, {
    ...credentials.channelOptions,
    ...grpcMessageLimits,
  });
  try {
    try {
      if (!unrooted) await proveServerIdentity(client.getChannel(), credentials, node.ekVerifier);
    } catch (identityError) {
      return { messages: [], identityError, credentials };
    }
    return await new Promise((resolve) => {
      const messages: InitResponse[] = [];
      const stream = client.init(request, { deadline: Date.now() + 180_000 });
      stream.on('data', (m: InitResponse) => messages.push(m));
      stream.on('error', (error: grpc.ServiceError) => {
        resolve({ messages, error, credentials });
      });
      stream.on('end', () => {
        resolve({ messages, credentials });
      });
    });
  } finally {
    client.close();
  }
}

export interface RunningJoinService {
  stop(): Promise<void>;
  /** What the service has logged so far (JSON lines). */
  output(): string;
}

/**
 * Starts the real JoinService as a process with the DaemonSet's arguments and the files its
 * volumes would mount, on the control plane that `request` initialised; the control plane serves
 * the attestation agent the service proves its host through, as program.ts does once bootstrapped.
 */
export async function startJoinServiceProcess(
  cluster: Cluster,
  controlPlane: TestNode,
  request: InitRequest,
  options: { attestationVariant?: 'tpm2-ek' | 'qemu-vtpm' } = {},
): Promise<RunningJoinService> {
  const agent = await serveAgentOnControlPlane(controlPlane.context);
  const dir = join(cluster.dir.path, 'joinservice');
  await mkdir(join(dir, 'config'), { recursive: true });
  await writeFile(join(dir, 'config', 'attestationConfig'), JSON.stringify(measurementsToFile(MEASUREMENTS)));
  await writeFile(join(dir, 'config', 'measurementSalt'), request.measurementSalt);
  await copyFile(cluster.ekCa.rootCertPath, join(dir, 'config', 'ekRoots'));
  await writeFile(
    join(dir, 'mastersecret.json'),
    masterSecretToJson({ key: request.masterSecret, salt: request.masterSalt }),
    { mode: 0o600 },
  );
  // On the control plane's machine: in its network namespace, on its address (its API server's).
  const ip = instanceIp(cluster, controlPlane.name);
  const index = cluster.instances.findIndex((i) => i.name === controlPlane.name);
  const [program, args] = inNode(cluster.network, index, process.execPath, [
    '--conditions=@constellation/source',
    '--import',
    'tsx',
    join(repoRoot(), 'apps/joinservice/src/main.ts'),
    `--host=${ip}`,
    `--port=${cluster.joinServicePort}`,
    `--metrics-host=${ip}`,
    '--metrics-port=0',
    '--health-port=0',
    `--config-dir=${join(dir, 'config')}`,
    `--master-secret-file=${join(dir, 'mastersecret.json')}`,
    `--pki-dir=${controlPlane.context.paths.kubernetesPki}`,
    `--kubeconfig=${controlPlane.context.paths.adminConf}`,
    `--api-server-endpoint=${ip}:${cluster.apiServerPort}`,
    `--instance-registry-url=${cluster.metadata.url}`,
    `--attestation-variant=${options.attestationVariant ?? 'tpm2-ek'}`,
    // An unrooted control plane serves no agent: it has no identity to prove its host with.
    ...(agent === undefined ? [] : [`--attestation-agent=${controlPlane.context.paths.attestationAgentSocket}`]),
  ]);
  const child = spawn(program, args, { cwd: repoRoot(), stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<string>((resolve) =>
    child.once('exit', (code, signal) => {
      resolve(signal === null ? `code ${String(code)}` : `signal ${signal}`);
    }),
  );
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  const stop = async (): Promise<void> => {
    child.kill('SIGTERM');
    // Its close takes up to 4 s (the join port's 2 s grace, then gRPC's 2 s), and it exits at most
    // 3 s after that even when something still holds it open (exit-when-closed.ts).
    await withTimeout(exited, 20_000, 'JoinService exit');
    await agent?.close();
  };
  const outputSoFar = (): string => (out === '' ? '(no output)' : `output: ${out.slice(-1_000)}`);
  // Run from source through tsx: its first start in a fresh clone compiles the service, slowly
  // when the other test files keep both cores busy. The error carries what the process printed.
  const serving = waitFor(
    () => {
      if (out.includes('"joinservice serving"')) return true;
      throw new Error(`not serving yet; ${outputSoFar()}`);
    },
    { timeoutMs: 60_000, description: 'the JoinService to serve' },
  );
  const exitedEarly = exited.then((status) => {
    throw new Error(`the JoinService exited (${status}) before serving; ${outputSoFar()}`);
  });
  exitedEarly.catch(() => undefined); // an exit after serving is stop()'s business
  try {
    await Promise.race([serving, exitedEarly]);
  } catch (err) {
    await stop();
    throw err;
  }
  return { stop, output: () => out };
}

export type { BootstrapOutcome };
