import { appendFile, copyFile, cp, mkdir, truncate, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { bootComponentEvent, measureBoot } from '@constellation/attestation';
import { EventLogWriter } from '@constellation/eventlog';
import type { BootComponent } from '@constellation/attestation';
import { startSwtpmProcess } from '@constellation/swtpm';
import {
  IGNORED_PREFLIGHT_CHECKS,
  bootNode,
  createNodeEnvironment,
  importImages,
  nodeLayout,
  startUnit,
  tagImage,
} from '@constellation/node-environment';
import type { UnitSpec } from '@constellation/node-environment';
import type { EkCa } from '@constellation/swtpm';
import { SocketTransport, Tpm } from '@constellation/tpm';
import type { MiniArtifacts } from './artifacts.js';
import { bootstrapperDigest, bootstrapperFiles } from './boot-chain.js';
import type { MiniNode } from './mini-state.js';
import type { Tamper } from './tamper.js';
import type { MiniNetwork } from '@constellation/node-environment';
import { MINI_OS } from './signed-components.js';

export interface StartNodeOptions {
  artifacts: MiniArtifacts;
  /** The cluster's directory; the node gets `<dir>/<name>` as its root. */
  dir: string;
  network: MiniNetwork;
  /** Position in the network (namespace and address). */
  index: number;
  instance: { name: string; role: 'control-plane' | 'worker'; ip: string; ekPublicKeyHash: string };
  metadataUrl: string;
  apiServerPort: number;
  /** The built programs: containerd, runc and ctr run from here; node preparation installs kubeadm and the kubelet from the artifact host. */
  kubernetesBinDir: string;
  /** Every node's name and address (each node's /etc/hosts). */
  hosts: { name: string; ip: string }[];
  /** The OCI archives the node image carries, by role, the names the kubelet asks for, and the sandbox image. */
  images: NodeImages;
  boot: BootComponent[];
  /** What the node image carries: the vendor's signing key and the EK CA's public certificates. */
  image: { publicKey: string; ekCa: EkCa };
  /** Run a modified bootstrapper bundle, and what its event log says about it. */
  tamper: Tamper | undefined;
}

export interface NodeImages {
  controlPlane: string[];
  worker: string[];
  /** [source, target]: names given to the control planes' imported images (an archive keeps a short name as written). */
  tags: [string, string][];
  sandbox: string;
}

/** The node image's files: OS facts, the pinned signing key and the EK CA certificates. */
async function writeImageFiles(
  nodeDir: string,
  image: StartNodeOptions['image'],
): Promise<{ ekRoots: string; ekIntermediates: string }> {
  await mkdir(join(nodeDir, 'usr', 'lib'), { recursive: true });
  await writeFile(
    join(nodeDir, 'usr', 'lib', 'os-release'),
    `NAME="constellation mini"\nVERSION_ID=${MINI_OS.version}\nCOREOS_BOARD=${MINI_OS.board}\n`,
  );
  const etc = join(nodeDir, 'etc', 'constellation');
  await mkdir(etc, { recursive: true });
  // Explicit mode: node preparation refuses a keyring that others can write, whatever the umask.
  await writeFile(join(etc, 'pubring.asc'), image.publicKey, { mode: 0o644 });
  // The EK CA's certificates are public: the node sends the intermediate with its EK certificate,
  // and checks the JoinService's host against the pinned root before it uses a join ticket.
  const ekIntermediates = join(etc, 'ek-intermediates.pem');
  await copyFile(image.ekCa.intermediateCertPath, ekIntermediates);
  const ekRoots = join(etc, 'ek-roots.pem');
  await copyFile(image.ekCa.rootCertPath, ekRoots);
  return { ekRoots, ekIntermediates };
}

/**
 * The node image's kube-proxy settings (the bootstrapper's --kube-proxy-config), for a cluster
 * that runs kube-proxy: the nftables proxier (the host kernel has nf_tables; the image carries
 * `nft`), conntrack's table size left alone (nf_conntrack_max is the host's, read-only in a node's
 * network namespace, and kube-proxy exits when it cannot set it), and mini's pod network, so that
 * kube-proxy tells pod traffic from outside traffic.
 */
export async function writeKubeProxyConfig(nodeDir: string): Promise<string> {
  const file = join(nodeDir, 'etc', 'constellation', 'kube-proxy.yaml');
  await mkdir(dirname(file), { recursive: true });
  await writeFile(
    file,
    [
      "# KubeProxyConfiguration fields of mini's node image, merged into the one kubeadm init gets.",
      'mode: nftables',
      'conntrack:',
      '  maxPerCore: 0',
      `clusterCIDR: ${POD_NETWORK}`,
      '',
    ].join('\n'),
  );
  return file;
}

/**
 * The node's firmware event log, as the bootstrapper reads it (`--event-log`, below its root):
 * the measured boot writes a real TCG log (crypto-agile, SHA-256) in step with its extends.
 */
export const BOOT_EVENT_LOG = '/var/lib/measured-boot/binary_bios_measurements';

/**
 * Power-on: the TPM measures the boot chain (a tampered node's bootstrapper has another digest)
 * and the node's event log records each measurement, as firmware and boot loader do. `boot` is
 * the image's chain; a tampered node's log may lie about it, as an attacker's would.
 */
export async function measuredBoot(
  tpmSocket: string,
  boot: BootComponent[],
  bundle: string,
  tamper: Tamper | undefined,
  nodeDir: string,
): Promise<void> {
  const tpm = new Tpm(new SocketTransport({ path: tpmSocket }));
  const eventLog = join(nodeDir, BOOT_EVENT_LOG);
  try {
    const chain =
      tamper === undefined
        ? boot
        : [
            ...boot.filter((c) => c.pcr !== 9),
            { pcr: 9, description: 'bootstrapper bundle', digest: await bootstrapperDigest(bundle) },
          ];
    await measureBoot(tpm, chain, { eventLog });
  } finally {
    await tpm.close();
  }
  if (tamper === 'log-digest' || tamper === 'log-removed') {
    const writer = new EventLogWriter({ banks: ['sha256'] });
    for (const component of boot)
      if (tamper === 'log-digest' || component.pcr !== 9) writer.append(bootComponentEvent(component));
    await writeFile(eventLog, writer.bytes());
  }
}

/** Where a tampered node's modified copy of the bootstrapper's directory lives. */
export function tamperedBootstrapper(nodeDir: string, bundle: string): string {
  return join(nodeDir, 'bin', 'bootstrapper', basename(bundle));
}

/**
 * A modified copy of the bootstrapper: one file changed after the image was measured, a chunk that
 * is loaded later when there is one (the measurement covers every file, not just the entry).
 */
async function tamperWithBootstrapper(bundle: string, copy: string): Promise<void> {
  await cp(dirname(bundle), dirname(copy), { recursive: true });
  const files = await bootstrapperFiles(copy);
  const chunk = files.find((file) => file.startsWith('chunks/') && file.endsWith('.mjs'));
  await appendFile(join(dirname(copy), chunk ?? basename(copy)), '\n// modified after the image was measured\n');
}

/** The node image's unit for the bootstrapper (deploy/bootstrapper's unit, with mini's flags). */
export const BOOTSTRAPPER_UNIT = 'constellation-bootstrapper';

/**
 * Present once the images a node image carries are in the node's containerd: the bootstrapper
 * starts at boot only then (on a real image they are there before its first boot).
 */
export const imagesPreloaded = (nodeDir: string): string => join(nodeDir, 'etc', 'constellation', 'images-preloaded');

/**
 * One machine: its swtpm on owner-only unix sockets, measured boot, an empty state disk, the node
 * image's files, and its own environment (network and mount namespace, cgroup root, containerd,
 * the kubelet and the bootstrapper as units); powered on, with the image's container images
 * imported before the bootstrapper starts.
 */
export async function startNode(options: StartNodeOptions): Promise<MiniNode> {
  const { artifacts, instance, network, tamper } = options;
  const tampered = tamper !== undefined;
  const nodeDir = join(options.dir, instance.name);
  await mkdir(join(nodeDir, 'bin'), { recursive: true });
  let bundle = artifacts.bootstrapper;
  if (tampered) {
    bundle = tamperedBootstrapper(nodeDir, artifacts.bootstrapper);
    await tamperWithBootstrapper(artifacts.bootstrapper, bundle);
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
  await measuredBoot(tpmSocket, options.boot, bundle, tamper, nodeDir);
  const disk = join(nodeDir, 'state.img');
  await writeFile(disk, '');
  await truncate(disk, 32 * 1024 * 1024);
  const { ekRoots, ekIntermediates } = await writeImageFiles(nodeDir, options.image);
  const kubeProxyConfig = await writeKubeProxyConfig(nodeDir);
  const netns = network.namespaces[options.index];
  if (netns === undefined) throw new Error(`no network namespace for ${instance.name}`);
  const ports = { init: 9000, recovery: 9999, verify: 30081 };
  const layout = nodeLayout(nodeDir);
  const bootstrapper: UnitSpec = {
    name: BOOTSTRAPPER_UNIT,
    exec: [
      process.execPath,
      bundle,
      `--root=${nodeDir}`,
      `--tpm=swtpm:${tpmSocket}`,
      '--attestation-variant=tpm2-ek',
      `--ek-intermediates=${ekIntermediates}`,
      `--ek-roots=${ekRoots}`,
      `--state-disk=${disk}`,
      '--disk-kdf=fast',
      `--metadata-url=${options.metadataUrl}`,
      `--node-name=${instance.name}`,
      `--init-host=${instance.ip}`,
      `--init-port=${ports.init}`,
      `--recovery-port=${ports.recovery}`,
      `--verify-port=${ports.verify}`,
      `--event-log=${BOOT_EVENT_LOG}`,
      `--manifest-url=${options.metadataUrl}/artifacts/manifests/{{.Board}}/{{.OSVersion}}/{{.KubernetesVersion}}.json`,
      `--api-server-bind-port=${options.apiServerPort}`,
      // The node image's kubeadm settings: the kubelet tuned to this host, images preloaded.
      `--kubeadm-patches=${layout.kubeadmPatches}`,
      `--kube-proxy-config=${kubeProxyConfig}`,
      `--kubeadm-ignore-preflight-errors=${IGNORED_PREFLIGHT_CHECKS.join(',')}`,
      '--image-pull-policy=Never',
      '--on-fatal=exit',
      // The JoinService starts after init; a short cap keeps waiting workers from sleeping long.
      '--join-backoff-max-ms=2000',
    ],
    conditionPathExists: imagesPreloaded(nodeDir),
    startAtBoot: true,
    // A failure is what mini reports (a real image's unit restarts it, or the node reboots).
    restart: 'no',
    restartDelayMs: 0,
  };
  const installed = join(nodeDir, 'run', 'state', 'bin');
  let environment = await createNodeEnvironment({
    dir: nodeDir,
    name: instance.name,
    netns,
    hosts: options.hosts,
    podSubnet: podSubnet(options.index),
    peerPodSubnets: options.hosts
      .map((host, i) => ({ subnet: podSubnet(i), via: host.ip }))
      .filter((_, i) => i !== options.index),
    binDir: options.kubernetesBinDir,
    sandboxImage: options.images.sandbox,
    cniBinDir: CNI_BIN_DIR,
    kubelet: join(installed, 'kubelet'),
    units: [bootstrapper],
    path: [installed],
    runnerCommand: [process.execPath, artifacts.cli, 'mini', 'node-runner'],
    systemctlCommand: [process.execPath, artifacts.cli, 'mini', 'systemctl'],
  });
  environment = await bootNode(environment);
  const ctr = join(options.kubernetesBinDir, 'ctr');
  const controlPlane = instance.role === 'control-plane';
  await importImages(environment, ctr, controlPlane ? options.images.controlPlane : options.images.worker);
  if (controlPlane)
    for (const [source, target] of options.images.tags) await tagImage(environment, ctr, source, target);
  await writeFile(imagesPreloaded(nodeDir), `${new Date().toISOString()}\n`);
  await startUnit(environment, BOOTSTRAPPER_UNIT);
  return {
    ...instance,
    dir: nodeDir,
    tpmSocket,
    swtpmPid: swtpm.pid,
    initPort: ports.init,
    recoveryPort: ports.recovery,
    verifyPort: ports.verify,
    tampered,
    ...(tamper === undefined ? {} : { tamper }),
  };
}

/** The pods' addresses, cluster-wide. */
export const POD_NETWORK = '10.244.0.0/16';

/** Each node's pods get addresses from a /24 of POD_NETWORK of their own. */
export const podSubnet = (index: number): string => `10.244.${index}.0/24`;

/** Debian's containernetworking-plugins. */
export const CNI_BIN_DIR = '/usr/lib/cni';
