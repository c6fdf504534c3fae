import { appendFile, copyFile, cp, mkdir, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { BootComponent } from '@constellation/attestation';
import { createNamespaceMachine, namespaceMachinePaths } from '@constellation/machines';
import type { Firmware, Machine, NamespaceMachinePaths } from '@constellation/machines';
import {
  CNI_BIN_DIR,
  IGNORED_PREFLIGHT_CHECKS,
  POD_NETWORK,
  nodeLayout,
  peerPodRoutes,
  podSubnet,
} from '@constellation/node-environment';
import type { HostView, UnitSpec } from '@constellation/node-environment';
import { bootstrapperDigest, bootstrapperFiles } from '../boot-chain.js';
import { MINI_OS } from '../signed-components.js';
import type { Tamper } from '../tamper.js';
import type { ImageTrust, NodeSpec } from '../node-spec.js';

/** The node image's unit for the bootstrapper (deploy/bootstrapper's unit, with mini's flags). */
export const BOOTSTRAPPER_UNIT = 'constellation-bootstrapper';

/**
 * Present once the images a node image carries are in the node's containerd: the bootstrapper
 * starts at boot only then (on a real image they are there before its first boot).
 */
export const IMAGES_PRELOADED = '/etc/constellation/images-preloaded';

/** The node image's files: OS facts, the pinned signing key and the EK CA certificates. */
async function writeImageFiles(
  nodeDir: string,
  trust: ImageTrust,
): Promise<{ ekRoots: string; ekIntermediates: string }> {
  await mkdir(join(nodeDir, 'usr', 'lib'), { recursive: true });
  await writeFile(
    join(nodeDir, 'usr', 'lib', 'os-release'),
    `NAME="constellation mini"\nVERSION_ID=${MINI_OS.version}\nCOREOS_BOARD=${MINI_OS.board}\n`,
  );
  const etc = join(nodeDir, 'etc', 'constellation');
  await mkdir(etc, { recursive: true });
  // Explicit mode: node preparation refuses a keyring that others can write, whatever the umask.
  await writeFile(join(etc, 'pubring.asc'), trust.manifestPublicKey, { mode: 0o644 });
  // The EK CA's certificates are public: the node sends the intermediate with its EK certificate,
  // and checks the JoinService's host against the pinned root before it uses a join ticket.
  const ekIntermediates = join(etc, 'ek-intermediates.pem');
  await copyFile(trust.ekCa.intermediateCertPath, ekIntermediates);
  const ekRoots = join(etc, 'ek-roots.pem');
  await copyFile(trust.ekCa.rootCertPath, ekRoots);
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

/**
 * What the namespace node's stand-in firmware measures and logs: the image's chain, a tampered
 * node's own bootstrapper in its place, and a log that may lie about it (the image's digest in
 * place of the measured one, or the bootstrapper's event removed), as an attacker's would.
 */
async function firmwareOf(
  boot: readonly BootComponent[],
  bundle: string,
  tamper: Tamper | undefined,
): Promise<Firmware> {
  if (tamper === undefined) return { measured: [...boot] };
  const measured = [
    ...boot.filter((c) => c.pcr !== 9),
    { pcr: 9, description: 'bootstrapper bundle', digest: await bootstrapperDigest(bundle) },
  ];
  if (tamper === 'log-digest') return { measured, logged: [...boot] };
  if (tamper === 'log-removed') return { measured, logged: boot.filter((c) => c.pcr !== 9) };
  return { measured };
}

/**
 * mini's namespace node: the node image's files written into the machine's directory (its root
 * as the bootstrapper sees it), the bootstrapper as a unit with the image's flags, the firmware
 * that measures the image's chain, and the machine itself (libs/machines, namespaces provider).
 */
export async function createNamespaceNode(spec: NodeSpec): Promise<Machine> {
  const { instance, network, tamper } = spec;
  const nodeDir = spec.dir;
  const paths = namespaceMachinePaths(nodeDir);
  await mkdir(join(nodeDir, 'bin'), { recursive: true });
  let bundle = spec.artifacts.bootstrapper;
  if (tamper !== undefined) {
    bundle = tamperedBootstrapper(nodeDir, spec.artifacts.bootstrapper);
    await tamperWithBootstrapper(spec.artifacts.bootstrapper, bundle);
  }
  const { ekRoots, ekIntermediates } = await writeImageFiles(nodeDir, spec.imageTrust);
  const kubeProxyConfig = await writeKubeProxyConfig(nodeDir);
  const netns = network.namespaces[spec.index];
  if (netns === undefined) throw new Error(`no network namespace for ${instance.name}`);
  const layout = nodeLayout(nodeDir);
  const bootstrapper: UnitSpec = {
    name: BOOTSTRAPPER_UNIT,
    exec: [
      process.execPath,
      bundle,
      `--root=${nodeDir}`,
      `--tpm=swtpm:${paths.tpmSocket}`,
      '--attestation-variant=tpm2-ek',
      `--ek-intermediates=${ekIntermediates}`,
      `--ek-roots=${ekRoots}`,
      `--state-disk=${paths.stateDisk}`,
      '--disk-kdf=fast',
      `--metadata-url=${spec.metadataUrl}`,
      `--node-name=${instance.name}`,
      `--init-host=${instance.ip}`,
      `--init-port=${spec.ports.init}`,
      `--recovery-port=${spec.ports.recovery}`,
      `--verify-port=${spec.ports.verify}`,
      `--event-log=${paths.eventLog}`,
      `--manifest-url=${spec.metadataUrl}/artifacts/manifests/{{.Board}}/{{.OSVersion}}/{{.KubernetesVersion}}.json`,
      `--api-server-bind-port=${spec.apiServerPort}`,
      // The node image's kubeadm settings: the kubelet tuned to this host, images preloaded.
      `--kubeadm-patches=${layout.kubeadmPatches}`,
      `--kube-proxy-config=${kubeProxyConfig}`,
      `--kubeadm-ignore-preflight-errors=${IGNORED_PREFLIGHT_CHECKS.join(',')}`,
      '--image-pull-policy=Never',
      '--on-fatal=exit',
      // The JoinService starts after init; a short cap keeps waiting workers from sleeping long.
      '--join-backoff-max-ms=2000',
    ],
    conditionPathExists: join(nodeDir, IMAGES_PRELOADED),
    startAtBoot: true,
    // A failure is what mini reports (a real image's unit restarts it, or the node reboots).
    restart: 'no',
    restartDelayMs: 0,
  };
  const installed = join(nodeDir, 'run', 'state', 'bin');
  return createNamespaceMachine({
    dir: nodeDir,
    name: instance.name,
    netns,
    hosts: spec.hosts,
    podSubnet: podSubnet(spec.index),
    peerPodSubnets: peerPodRoutes(spec.hosts, spec.index),
    binDir: spec.kubernetesBinDir,
    sandboxImage: spec.images.sandbox,
    cniBinDir: CNI_BIN_DIR,
    kubelet: join(installed, 'kubelet'),
    units: [bootstrapper],
    path: [installed],
    runnerCommand: [process.execPath, spec.artifacts.cli, 'mini', 'node-runner'],
    systemctlCommand: [process.execPath, spec.artifacts.cli, 'mini', 'systemctl'],
    firmware: await firmwareOf(spec.boot, bundle, tamper),
    stateDiskBytes: 32 * 1024 * 1024,
    hostView: nodeHostView(nodeDir, paths, spec.kubernetesBinDir),
  });
}

/**
 * What a namespace node sees of the host beside its own directory and the host's programs and
 * configuration (issue 50, item 6): the node image's programs, the Kubernetes programs and images,
 * node itself, and its TPM's data channel, each read-only but the socket. Not its TPM's state or
 * control channel (which resets the TPM, and with it every PCR), and nothing else: not the
 * workspace (the admin kubeconfig, the master secret), not the other nodes (control-plane-0's CA
 * key, their TPMs), not mini's vendor keys. A pod with a host path sees the same.
 */
function nodeHostView(nodeDir: string, paths: NamespaceMachinePaths, kubernetesBinDir: string): HostView {
  return [
    { show: join(dirname(nodeDir), 'image') },
    { hide: paths.tpmDir },
    { show: paths.tpmSocket, writable: true },
    { show: dirname(kubernetesBinDir) },
    { show: process.execPath },
  ];
}
