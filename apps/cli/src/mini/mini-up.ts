import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { bootEventPolicy, expectedMeasurements } from '@constellation/attestation';
import type { BootComponent } from '@constellation/attestation';
import { UsageError } from '@constellation/command-line';
import { errorMessage } from '@constellation/errors';
import { pathExists } from '@constellation/files';
import { hashInitSecret } from '@constellation/keys';
import { Kubectl, locateKubernetesPrograms } from '@constellation/kubernetes-programs';
import type { KubernetesPrograms } from '@constellation/kubernetes-programs';
import { miniClusterDir, probeKvm } from '@constellation/machines';
import { isRunning, spawnDetached, waitUntil } from '@constellation/process';
import type { AccelChoice } from '@constellation/machines';
import { CNI_BIN_DIR } from '@constellation/node-environment';
import { createEkCa, manufactureTpm } from '@constellation/swtpm';
import type { EkCa } from '@constellation/swtpm';
import { configYaml } from '../constellation-conf.js';
import { CLI_DEFAULTS } from '../config.js';
import { runInit } from '../init-command.js';
import { selfCommand } from '../self-command.js';
import { workspaceFiles, writeWorkspaceFile } from '../workspace.js';
import { copyNodeImage, findArtifacts } from './artifacts.js';
import type { MiniArtifacts } from './artifacts.js';
import { bootChain } from './boot-chain.js';
import { deployJoinService } from './joinservice-deployment.js';
import { machineOf, readMiniState, writeMiniState } from './mini-state.js';
import type { MiniNode, MiniState } from './mini-state.js';
import { createNetwork } from '@constellation/node-environment';
import { nodeImages } from './node-images.js';
import { MINI_OS, generateManifestSigningKey, publishComponents, signManifests } from './signed-components.js';
import type { ManifestSigningKey } from './signed-components.js';
import { openMiniVendor } from './vendor.js';
import type { MiniVendor } from './vendor.js';
import { openVmImage, vmImageBuildCommand } from './vm-image.js';
import type { VmImage } from './vm-image.js';
import type { VmTamper } from './providers/vm-tamper.js';
import { startNode } from './start-node.js';
import type { ImageTrust, NodeImages } from './node-spec.js';
import { findBuiltKubernetes } from './built-kubernetes.js';
import { spreadCoreDns } from './spread-coredns.js';
import { waitForNodes } from './wait-for-nodes.js';
import type { MiniNodeResult } from './wait-for-nodes.js';
import type { Tamper } from './tamper.js';

export interface MiniUpOptions {
  workspace: string;
  controlPlanes: number;
  workers: number;
  /**
   * Workers made (TPM, state disk, images) and registered with the cloud stand-in, then left
   * powered off: `mini start` boots them later (to watch joins happen, or to add capacity).
   */
  poweredOffWorkers?: number;
  /** Workers whose bootstrapper bundle is modified (to see a tampered node refused). */
  tamperedWorkers?: number;
  /** What each tampered worker's event log says, in worker order; the last repeats ("bootstrapper" by default). */
  tamper?: readonly Tamper[];
  /** Workers that are QEMU VMs booting the node image (after the namespace workers). */
  vmWorkers?: number;
  /** What each tampered VM worker's boot changes, in VM worker order; the others boot the image as built. */
  vmTamper?: readonly VmTamper[];
  /** The node image the VM workers boot (`npm run node-image -- --guest-agent` with mini's trust options). */
  nodeImage?: string;
  kubernetesVersion?: string;
  /** How long to wait for every node to join (default: 2 min and 45 s per node after the first). */
  joinTimeoutMs?: number;
  /**
   * The built Kubernetes programs (what `node tools/kubernetes/build.mjs` prints): the control
   * plane and kubectl. Default: the newest release built in the cache (findBuiltKubernetes).
   */
  kubernetesBinDir?: string;
  print: (line: string) => void;
}

export interface MiniUpResult {
  nodes: MiniNodeResult[];
  kubeconfig: string;
  /** The built kubectl, of the cluster's release. */
  kubectl: string;
  state: string;
  elapsedMs: number;
}

type Instance = { name: string; role: 'control-plane' | 'worker'; ip: string; vm: boolean };

/** With VM workers: the node image, and the vendor it trusts (whose EK CA and manifest key the cluster uses). */
interface VmNodes {
  image: VmImage;
  vendor: MiniVendor;
  /** KVM where it was seen to boot OVMF here, else software emulation (probeKvm). */
  accel: AccelChoice['accel'];
}

/** Everything the steps of `mini up` share once the cluster directory and network exist. */
interface MiniUpRun {
  options: MiniUpOptions;
  programs: KubernetesPrograms;
  artifacts: MiniArtifacts;
  state: MiniState;
  instances: Instance[];
  boot: BootComponent[];
  initSecret: string;
  kubernetesVersion: string;
  images: NodeImages;
  /** Present when the cluster has VM workers. */
  vms: VmNodes | undefined;
  /** The workers made but left powered off (the last namespace workers). */
  poweredOff: ReadonlySet<string>;
  started: number;
}

/** A progress line with the time since `mini up` started. */
function progress(run: Pick<MiniUpRun, 'options' | 'started'>, line: string): void {
  run.options.print(`[${((Date.now() - run.started) / 1000).toFixed(1).padStart(5)} s] ${line}`);
}

/** What the progress line says about a tampered node. */
function tamperNote(node: MiniNode): string {
  if (node.vmTamper !== undefined) return ` (boots a MODIFIED UKI: ${node.vmTamper})`;
  if (!node.tampered) return '';
  const log = node.tamper === undefined || node.tamper === 'bootstrapper' ? '' : `, event log: ${node.tamper}`;
  return ` (bootstrapper bundle MODIFIED${log})`;
}

/** The VM tamper option of one node, when it has one. */
function vmTamperOf(modes: ReadonlyMap<string, VmTamper>, name: string): { vmTamper?: VmTamper } {
  const mode = modes.get(name);
  return mode === undefined ? {} : { vmTamper: mode };
}

/** Each --tamper mode names a tampered worker: more modes than such workers is a mistake to say. */
function checkTamperOptions(options: MiniUpOptions): void {
  const vmModes = options.vmTamper?.length ?? 0;
  if (vmModes > (options.vmWorkers ?? 0))
    throw new UsageError(
      `--vm-tamper lists ${vmModes} modes for ${options.vmWorkers ?? 0} VM workers: give --vm-workers ${vmModes} or more`,
    );
  const modes = options.tamper?.length ?? 0;
  const tampered = options.tamperedWorkers ?? 0;
  if (tampered > options.workers)
    throw new UsageError(`--tampered-workers ${tampered} is more than --workers ${options.workers}`);
  if (modes > tampered)
    throw new UsageError(
      `--tamper lists ${modes} modes for ${tampered} tampered workers: give --tampered-workers ${modes} or fewer modes`,
    );
}

/**
 * `constellation mini up`: a whole attested cluster on this machine. Every node is a machine of its
 * own (swtpm, LUKS2 state disk, network and mount namespace, cgroup root, containerd, kubelet and
 * bootstrapper run as units); `init` runs against the first control plane like a user would, which
 * runs the real `kubeadm init`; the JoinService is deployed as its DaemonSet, and the other control
 * planes and the workers join through it with the real `kubeadm join`.
 */
export async function miniUp(options: MiniUpOptions): Promise<MiniUpResult> {
  const started = Date.now();
  if (process.getuid?.() !== 0)
    throw new UsageError(
      'mini needs root: each node is a network and mount namespace of its own, with cgroups of its own (run it as root)',
    );
  checkTamperOptions(options);
  await refuseRunningCluster(options.workspace);
  const vms = await vmNodes(options);
  const kubernetesBinDir = options.kubernetesBinDir ?? (await findBuiltKubernetes());
  if (options.kubernetesBinDir === undefined)
    options.print(
      `the Kubernetes programs: ${kubernetesBinDir} (the newest release built; --kubernetes-bin-dir picks others)`,
    );
  const programs = await locateKubernetesPrograms(kubernetesBinDir);
  const built = await findArtifacts();
  const images = await nodeImages(programs.binDir, built);
  if (!(await pathExists(join(CNI_BIN_DIR, 'bridge'))))
    throw new UsageError(
      `mini's pod network needs the CNI plugins in ${CNI_BIN_DIR} (Debian package containernetworking-plugins)`,
    );
  const dir = miniClusterDir(options.workspace);
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const artifacts = await copyNodeImage(built, dir);
  const files = workspaceFiles(options.workspace);
  for (const stale of [files.state, files.kubeconfig, files.masterSecret, files.initSecret])
    await rm(stale, { force: true });

  const instances = nodeNames(
    options.controlPlanes,
    options.workers + (options.poweredOffWorkers ?? 0),
    options.vmWorkers ?? 0,
  );
  const network = await createNetwork(instances.length, options.vmWorkers ?? 0);
  const state: MiniState = {
    startedAt: new Date().toISOString(),
    dir,
    metadataPid: 0,
    metadataUrl: '',
    // Every node has its own network namespace, so the real ports are used.
    joinServicePort: 30090,
    apiServerPort: 6443,
    network,
    artifacts,
    kubernetesBinDir: programs.binDir,
    nodes: [],
  };
  await writeMiniState(options.workspace, state);
  options.print(
    `[  0.0 s] network: ${vms === undefined ? 'one network namespace per node' : 'one network namespace per namespace node, a tap per VM,'} on bridge ${network.bridge} (${network.hostIp}/24)`,
  );
  const initSecret = randomBytes(32).toString('base64url');
  await writeWorkspaceFile(files.initSecret, initSecret, true);
  try {
    return await bringUp({
      options,
      programs,
      artifacts,
      state,
      instances: instances.map((n, i) => ({ ...n, ip: network.nodeIps[i] ?? '' })),
      // With VMs every node shows the image's boot: the VMs' firmware measures it, and the namespace
      // nodes' stand-in firmware measures the same events, so one measurement set fits both.
      boot: vms === undefined ? await bootChain(artifacts.bootstrapper) : vms.image.boot,
      initSecret,
      // The release of the programs the control plane runs (kubeadm deploys its own minor only).
      kubernetesVersion: options.kubernetesVersion ?? programs.release,
      images,
      vms,
      poweredOff: new Set(
        instances
          .filter((i) => i.role === 'worker' && !i.vm)
          .slice(options.workers)
          .map((i) => i.name),
      ),
      started,
    }).then((nodes) => ({
      nodes,
      kubeconfig: files.kubeconfig,
      kubectl: programs.path('kubectl'),
      state: files.state,
      elapsedMs: Date.now() - started,
    }));
  } catch (err) {
    throw new Error(
      `${errorMessage(err)}\n(the partly started cluster is still there: \`${selfCommand(options.workspace, ['mini', 'down'])}\` removes it)`,
      { cause: err },
    );
  }
}

async function refuseRunningCluster(workspace: string): Promise<void> {
  const existing = await readMiniState(workspace);
  if (existing === undefined) return;
  const machines = await Promise.all(
    existing.nodes.map((n) =>
      machineOf(n)
        .hostProcesses()
        .catch(() => []),
    ),
  );
  const pids = [existing.metadataPid, ...existing.nodes.map((n) => n.swtpmPid), ...machines.flat()];
  if (pids.some(isRunning))
    throw new UsageError(
      `a mini cluster is already running in ${workspace} (started ${existing.startedAt}); run \`${selfCommand(workspace, ['mini', 'down'])}\` first`,
    );
}

function nodeNames(controlPlanes: number, workers: number, vmWorkers: number): Omit<Instance, 'ip'>[] {
  return [
    ...Array.from({ length: controlPlanes }, (_, i) => ({
      name: `control-plane-${i}`,
      role: 'control-plane' as const,
      vm: false,
    })),
    ...Array.from({ length: workers }, (_, i) => ({ name: `worker-${i + 1}`, role: 'worker' as const, vm: false })),
    ...Array.from({ length: vmWorkers }, (_, i) => ({ name: `vm-worker-${i + 1}`, role: 'worker' as const, vm: true })),
  ];
}

/** The node image and its vendor when the cluster has VM workers; refuses a missing or foreign image with the command that builds one. */
async function vmNodes(options: MiniUpOptions): Promise<VmNodes | undefined> {
  if ((options.vmWorkers ?? 0) === 0) {
    if (options.nodeImage !== undefined) throw new UsageError('--node-image is for VM workers: give --vm-workers too');
    return undefined;
  }
  const vendor = await openMiniVendor();
  if (options.nodeImage === undefined)
    throw new UsageError(
      `--vm-workers needs the node image they boot: build it with \`${vmImageBuildCommand(vendor)}\` (it prints the directory), then give --node-image <dir> (\`npm run mini -- --vm-workers ${options.vmWorkers ?? 0}\` does both)`,
    );
  const image = await openVmImage(options.nodeImage, vendor);
  const { accel, reason } = await probeKvm();
  options.print(
    accel === 'kvm'
      ? `VMs run with KVM (${reason})`
      : `VMs run under software emulation (TCG), slowly: KVM here: ${reason}`,
  );
  return { image, vendor, accel };
}

async function bringUp(run: MiniUpRun): Promise<MiniNodeResult[]> {
  const { options, state } = run;
  const files = workspaceFiles(options.workspace);
  const ekCa = await manufactureTpms(run);
  const { manifestPublicKey } = await startCloudStandIns(run);
  // VMs boot (minutes under software emulation) while init runs; their bootstrappers wait for the JoinService.
  const { vmsStarted } = await startNodes(run, { manifestPublicKey, ekCa });

  // The PCRs the image's boot measures (4 and 9; with VMs also 11), and PCR 15 at zero.
  const measurements = expectedMeasurements(run.boot, [...new Set([...run.boot.map((c) => c.pcr), 15])]);
  const first = state.nodes[0];
  if (first === undefined) throw new Error('no control plane started');
  await writeWorkspaceFile(
    files.config,
    configYaml({
      name: 'mini',
      kubernetesVersion: run.kubernetesVersion,
      initEndpoint: `${first.ip}:${first.initPort}`,
      apiServerCertSans: [],
      serviceCidr: CLI_DEFAULTS.serviceCidr,
      attestation: {
        variant: 'tpm2-ek',
        measurements,
        // Each measured PCR's events must carry exactly the image's digests: a refusal names the event.
        eventPolicy: bootEventPolicy(run.boot),
        ekRoots: await readFile(ekCa.rootCertPath, 'utf8'),
        ekIntermediates: await readFile(ekCa.intermediateCertPath, 'utf8'),
        firstControlPlaneEk: first.ekPublicKeyHash,
      },
    }),
    false,
  );
  progress(run, `config with the measured PCRs written to ${files.config}`);
  const init = await runInit({
    workspace: options.workspace,
    // mini's nodes have no CNI that proxies Services: kube-proxy does, as on any kubeadm cluster.
    conformance: true,
    print: (line) => {
      progress(run, `init: ${line}`);
    },
    retryDelayMs: 300,
    attempts: 20,
  });
  progress(run, `cluster ${init.clusterId} initialised (real kubeadm init on ${first.name})`);
  await deployJoinService({
    workspace: options.workspace,
    state,
    artifacts: run.artifacts,
    admin: new Kubectl(run.programs, files.kubeconfig),
  });
  progress(
    run,
    `JoinService deployed as the DaemonSet of deploy/joinservice (port ${state.joinServicePort} of every control plane); the other nodes join through it`,
  );
  await vmsStarted;
  const nodes = await waitForNodes({
    state,
    kubeconfig: files.kubeconfig,
    poweredOff: run.poweredOff,
    // Control planes join one at a time, about 20 s each on 2 idle cores; workers in parallel.
    // A VM under software emulation: node preparation, kubeadm join and the kubelet run 5-20x slower.
    timeoutMs:
      options.joinTimeoutMs ??
      120_000 +
        45_000 * (state.nodes.length - 1) +
        8 * 60_000 * state.nodes.filter((n) => n.provider === 'qemu').length,
    print: (line) => {
      progress(run, line);
    },
  });
  if (nodes.some((node) => node.role === 'worker' && node.ready)) {
    await spreadCoreDns(new Kubectl(run.programs, files.kubeconfig, { timeoutMs: 150_000 }));
    progress(run, "CoreDNS restarted once workers were Ready, so that its replicas spread (kubeadm's anti-affinity)");
  }
  return nodes;
}

/**
 * Like a cloud: one EK CA per cluster (its keys stay in the workspace, never on a node), every TPM
 * manufactured with an EK certificate from it, and each machine's EK recorded in the registry.
 */
async function manufactureTpms(run: MiniUpRun): Promise<EkCa> {
  const { state, instances } = run;
  // VMs carry their vendor's EK roots in their verified image: every TPM comes from that vendor then.
  const ekCa = run.vms?.vendor.ekCa ?? (await createEkCa(join(state.dir, 'ek-ca'), { name: 'constellation mini' }));
  const manufactured = await Promise.all(
    instances.map((instance) =>
      manufactureTpm({ stateDir: join(state.dir, instance.name, 'tpm'), vmid: instance.name, ca: ekCa }),
    ),
  );
  run.instances = instances.map((instance, i) => ({
    ...instance,
    ekPublicKeyHash: manufactured[i]?.ekPublicKeyHash ?? '',
  }));
  progress(
    run,
    run.vms === undefined
      ? `${instances.length} TPMs manufactured with EK certificates from the cluster's EK CA`
      : `${instances.length} TPMs manufactured with EK certificates from mini's vendor CA (${run.vms.vendor.dir}; the node image trusts it)`,
  );
  return ekCa;
}

/**
 * What a cloud gives its nodes, stood in for: the metadata service (instance registry, endpoint,
 * init-secret hash) and the artifact host with the signed component manifests. Returns the public
 * key those manifests are signed with, which the nodes' images pin.
 */
async function startCloudStandIns(run: MiniUpRun): Promise<{ manifestPublicKey: string }> {
  const { state, instances, options } = run;
  const firstControlPlane = instances[0];
  if (firstControlPlane === undefined) throw new UsageError('--control-planes must be at least 1');
  const documentFile = join(state.dir, 'metadata.json');
  await writeFile(
    documentFile,
    JSON.stringify({
      instances,
      // The control planes' load balancer, on the host side of the bridge (see api-load-balancer.ts).
      endpoint: {
        host: state.network.hostIp,
        apiServerPort: state.apiServerPort,
        joinServicePort: state.joinServicePort,
        initPort: 0,
      },
      initSecretHash: await hashInitSecret(Buffer.from(run.initSecret), { log2N: 14, r: 8, p: 1 }),
    }),
  );
  // Node preparation: kubeadm and the kubelet reach every node as signed, digest-checked components.
  const artifactsDir = join(state.dir, 'artifacts');
  // The namespace nodes' OS version, and the node image's (its node preparation asks for that one).
  const osVersions = [MINI_OS.version, ...(run.vms === undefined ? [] : [run.vms.image.osVersion])];
  await publishComponents(artifactsDir, run.programs.binDir, run.kubernetesVersion, osVersions);
  // A VM's image pins its vendor's key; namespace nodes alone get a key of this cluster's.
  const manifestKey: ManifestSigningKey = run.vms?.vendor.manifestKey ?? (await generateManifestSigningKey());
  const urlFile = join(state.dir, 'metadata.url');
  state.metadataPid = await spawnDetached(
    process.execPath,
    [
      run.artifacts.cli,
      'mini',
      'serve-metadata',
      '--document',
      documentFile,
      '--url-file',
      urlFile,
      '--host',
      state.network.hostIp,
      '--artifacts',
      artifactsDir,
      '--api-load-balancer',
      `${state.network.hostIp}:${state.apiServerPort}=${instances
        .filter((i) => i.role === 'control-plane')
        .map((i) => `${i.ip}:${state.apiServerPort}`)
        .join(',')}`,
    ],
    join(state.dir, 'metadata.log'),
    { name: 'the metadata server' },
  );
  // Ready signal: the server writes its URL once it listens.
  state.metadataUrl = await waitUntil(
    async () => {
      const url = (await readFile(urlFile, 'utf8').catch(() => '')).trim();
      return url === '' ? undefined : url;
    },
    { timeoutMs: 10_000, what: 'the metadata server writing its URL' },
  );
  await writeMiniState(options.workspace, state);
  await signManifests(artifactsDir, run.kubernetesVersion, osVersions, `${state.metadataUrl}/artifacts`, manifestKey);
  progress(
    run,
    `metadata server and artifact host (signed kubeadm and kubelet) at ${state.metadataUrl}; the control planes' load balancer at ${state.network.hostIp}:${state.apiServerPort}`,
  );
  return { manifestPublicKey: manifestKey.publicKey };
}

/**
 * Starts the namespace nodes one after the other and powers on the VMs; returns once the namespace
 * nodes run, with a promise for the VMs (booted, images imported), which fails with the first
 * VM's failure.
 */
async function startNodes(run: MiniUpRun, imageTrust: ImageTrust): Promise<{ vmsStarted: Promise<void> }> {
  const { options, state, artifacts } = run;
  const modes = options.tamper ?? ['bootstrapper'];
  const tampered = new Map(
    run.instances
      .filter((i) => i.role === 'worker' && !i.vm)
      .slice(0, options.tamperedWorkers ?? 0)
      .map((i, n) => [i.name, modes[Math.min(n, modes.length - 1)] ?? 'bootstrapper'] as const),
  );
  const vmTamper = new Map(
    run.instances
      .filter((i) => i.vm)
      .flatMap((i, n) => {
        const mode = options.vmTamper?.[n];
        return mode === undefined ? [] : [[i.name, mode] as const];
      }),
  );
  const hosts = run.instances.map(({ name, ip }) => ({ name, ip }));
  const vms: Promise<void>[] = [];
  // The first VM that fails ends the others' waits: mini up reports it and ends, not minutes later.
  const vmFailed = new AbortController();
  for (const [index, instance] of (run.instances as (Instance & { ekPublicKeyHash: string })[]).entries()) {
    const nodeStarted = Date.now();
    const started = startNode({
      artifacts,
      dir: state.dir,
      network: state.network,
      index,
      instance,
      metadataUrl: state.metadataUrl,
      apiServerPort: state.apiServerPort,
      kubernetesBinDir: run.programs.binDir,
      hosts,
      images: run.images,
      boot: run.boot,
      imageTrust,
      tamper: tampered.get(instance.name),
      poweredOff: run.poweredOff.has(instance.name),
      ...(instance.vm && run.vms !== undefined
        ? {
            vmImage: run.vms.image,
            vmAccel: run.vms.accel,
            vmsBootingAtOnce: options.vmWorkers ?? 1,
            signal: vmFailed.signal,
          }
        : {}),
      ...vmTamperOf(vmTamper, instance.name),
      print: (line) => {
        progress(run, line);
      },
    }).then(async (node) => {
      state.nodes.push(node);
      await writeMiniState(options.workspace, state);
      const took = `${((Date.now() - nodeStarted) / 1000).toFixed(1)} s`;
      progress(
        run,
        instance.vm
          ? `${instance.name}: VM booted the node image (OVMF measured it into its swtpm, EK sha256:${node.ekPublicKeyHash.slice(0, 12)}…), its systemd started the bootstrapper${node.vmTamper === undefined ? ', images imported' : ''}${tamperNote(node)} (${took}; serial console: ${join(node.dir, 'serial.log')})`
          : run.poweredOff.has(instance.name)
            ? `${instance.name}: swtpm (EK sha256:${node.ekPublicKeyHash.slice(0, 12)}…), LUKS2 disk, containerd with the node image's images, then powered off (\`${selfCommand(options.workspace, ['mini', 'start', instance.name])}\` boots it; ${took})`
            : `${instance.name}: swtpm (EK sha256:${node.ekPublicKeyHash.slice(0, 12)}…), measured boot, LUKS2 disk, containerd with the node image's images, bootstrapper started${tamperNote(node)} (${took})`,
      );
    });
    if (instance.vm) {
      // Observed now so that a failure while init runs is not an unhandled rejection; awaited later.
      started.catch(() => {
        vmFailed.abort(new Error(`stopped waiting: another VM failed to start`));
      });
      vms.push(started);
    } else {
      await started;
    }
  }
  // An async function's returned promise would be awaited with it: wrapped, the VMs are not.
  return { vmsStarted: Promise.all(vms).then(() => undefined) };
}
