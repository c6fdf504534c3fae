import { appendFile, copyFile, cp, mkdir, truncate, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { measureBoot } from '@constellation/attestation';
import type { BootComponent } from '@constellation/attestation';
import { freePort, startSwtpmProcess } from '@constellation/swtpm';
import type { EkCa } from '@constellation/swtpm';
import { SocketTransport, Tpm } from '@constellation/tpm';
import type { MiniArtifacts } from './artifacts.js';
import { bootstrapperDigest, bootstrapperFiles } from './boot-chain.js';
import { spawnDetached } from './detached.js';
import type { MiniNode } from './mini-state.js';
import { inNode } from './network.js';
import type { MiniNetwork } from './network.js';
import { MINI_OS } from './signed-components.js';
import { BIN_DIR_ENV } from '@constellation/sandbox';

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
  /** The built Kubernetes programs the kubeadm stand-in runs the control plane from. */
  kubernetesBinDir: string;
  boot: BootComponent[];
  /** What the node image carries: the vendor's signing key and the EK CA's public certificates. */
  image: { publicKey: string; ekCa: EkCa };
  /** Run a modified bootstrapper bundle (its measured boot says so). */
  tampered: boolean;
  /** What the node runs when it belongs to the cluster ("start the kubelet"). */
  kubeletStartCommand: string;
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

/** Power-on: the TPM measures the boot chain (a tampered node's bootstrapper has another digest). */
async function measuredBoot(
  tpmSocket: string,
  boot: BootComponent[],
  bundle: string,
  tampered: boolean,
): Promise<void> {
  const tpm = new Tpm(new SocketTransport({ path: tpmSocket }));
  try {
    const chain = tampered
      ? [
          ...boot.filter((c) => c.pcr !== 9),
          { pcr: 9, description: 'bootstrapper bundle', digest: await bootstrapperDigest(bundle) },
        ]
      : boot;
    await measureBoot(tpm, chain);
  } finally {
    await tpm.close();
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

/**
 * One machine: its swtpm on owner-only unix sockets, measured boot, an empty state disk, the node
 * image's files, and the bootstrapper started detached (in the node's network namespace as root).
 */
export async function startNode(options: StartNodeOptions): Promise<MiniNode> {
  const { artifacts, instance, network, tampered } = options;
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
  await measuredBoot(tpmSocket, options.boot, bundle, tampered);
  const disk = join(nodeDir, 'state.img');
  await writeFile(disk, '');
  await truncate(disk, 32 * 1024 * 1024);
  const { ekRoots, ekIntermediates } = await writeImageFiles(nodeDir, options.image);
  const namespaced = network.mode === 'namespaces';
  const initPort = namespaced ? 9000 : await freePort();
  const recoveryPort = namespaced ? 9999 : await freePort();
  const verifyPort = namespaced ? 30081 : await freePort();
  const [program, args] = inNode(network, options.index, process.execPath, [
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
    `--init-port=${initPort}`,
    `--recovery-port=${recoveryPort}`,
    `--verify-port=${verifyPort}`,
    `--manifest-url=${options.metadataUrl}/artifacts/manifests/{{.Board}}/{{.OSVersion}}/{{.KubernetesVersion}}.json`,
    `--api-server-bind-port=${options.apiServerPort}`,
    `--kubelet-start-command=${options.kubeletStartCommand}`,
    '--on-fatal=exit',
    // The JoinService starts after init; a short cap keeps waiting workers from sleeping long.
    '--join-backoff-max-ms=2000',
  ]);
  // kubeadm is found on the node's PATH, where node preparation installs it; the stand-in starts
  // the real control plane from the built programs, in the node's own network namespace.
  const bootstrapperEnv = {
    KUBEADM_STANDIN_ROOT: nodeDir,
    [BIN_DIR_ENV]: options.kubernetesBinDir,
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
