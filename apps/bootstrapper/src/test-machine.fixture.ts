// Test fixture: a node's machine below the bootstrapper, as mini makes it (libs/node-environment):
// its own network and mount namespace, cgroup root, containerd and runc with the control plane's
// images imported, and a unit runner that plays systemd's part. The real kubeadm and kubelet are
// the run's built programs, taken straight from their directory through the node's PATH (no node
// preparation: the bootstrapper's own tests set it per test). kubeadm runs in the machine's
// namespaces with the machine's `systemctl` first on its PATH, so `kubeadm init` and `join` start
// the kubelet as on a real node; the kubelet's unit runs as kubeadm's systemd drop-in starts it.
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { KubeadmNodeOptions } from '@constellation/kubeadm';
import {
  IGNORED_PREFLIGHT_CHECKS,
  bootNode,
  createNodeEnvironment,
  destroyNode,
  CNI_BIN_DIR,
  nodeLayout,
  nodeProgramCommands,
  peerPodRoutes,
  podSubnet,
  resetForBoot,
  shutdownNode,
  startUnit,
} from '@constellation/node-environment';
import type { NodeEnvironment, NodeNetwork, UnitsFile } from '@constellation/node-environment';
import { importImages, openMachine } from '@constellation/machines';
import { inNamespaces } from '@constellation/process';
import { kubernetesBinDir } from '@constellation/testing';
import { archivePath, imagesDirBeside, readImagesManifest, sandboxImage } from '@constellation/kubernetes-programs';

export interface MachinePlace {
  /** The node's root on the host: the machine's bind mounts' sources are below it. */
  root: string;
  name: string;
  role: 'control-plane' | 'worker';
  network: NodeNetwork;
  /** The node's position in the network (its namespace and address). */
  index: number;
  /** Every node's name and address (each machine's /etc/hosts). */
  hosts: { name: string; ip: string }[];
}

export interface TestMachine {
  environment: NodeEnvironment;
  /** The real kubeadm, run in the machine (a script that enters its namespaces). */
  kubeadm: string;
  /** What the node image sets for every kubeadm run, as mini's bootstrapper flags set it. */
  kubeadmNode: KubeadmNodeOptions;
  /** `systemctl start kubelet` on the machine. */
  startKubelet(): Promise<void>;
  /** Powers the machine off and on: its units, containers and mounts go, containerd starts again (not the kubelet). */
  reboot(): Promise<void>;
  destroy(): Promise<void>;
}

/** The images the node image carries (tools/kubernetes/images.ts, beside the programs), by role; and the sandbox's name. */
async function nodeImages(
  binDir: string,
  role: MachinePlace['role'],
): Promise<{ archives: string[]; sandbox: string }> {
  const dir = imagesDirBeside(binDir);
  const manifest = await readImagesManifest(dir, 'node tools/kubernetes/images.mjs');
  const sandbox = sandboxImage(manifest, dir);
  // Control planes run the control plane's static pods; no test here runs a pod of its own.
  const carried =
    role === 'control-plane' ? manifest.images.filter((image) => !image.reference.includes('/busybox:')) : [sandbox];
  return { archives: carried.map((image) => archivePath(dir, image)), sandbox: sandbox.reference };
}

const shellQuote = (word: string): string => `'${word.replaceAll("'", `'\\''`)}'`;

/**
 * Makes and powers on the machine of a node at `place`, with its images imported. It is removed
 * again (processes, mount namespace, cgroups) when anything on the way fails.
 */
export async function startTestMachine(place: MachinePlace): Promise<TestMachine> {
  const binDir = kubernetesBinDir();
  const netns = place.network.namespaces[place.index];
  if (netns === undefined) throw new Error(`no network namespace for ${place.name}`);
  const { runnerCommand, systemctlCommand, hostView } = nodeProgramCommands();
  const images = await nodeImages(binDir, place.role);
  const layout = nodeLayout(place.root);
  const created = await createNodeEnvironment({
    dir: place.root,
    name: place.name,
    netns,
    hosts: place.hosts,
    podSubnet: podSubnet(place.index),
    peerPodSubnets: peerPodRoutes(place.hosts, place.index, (ip) => place.network.nodeIps.includes(ip)),
    binDir,
    sandboxImage: images.sandbox,
    cniBinDir: CNI_BIN_DIR,
    kubelet: join(binDir, 'kubelet'),
    units: [],
    path: [],
    runnerCommand,
    systemctlCommand,
    // The node image's other programs and its images, beside the run's built kubeadm and kubelet.
    hostView: [...hostView, { show: dirname(binDir) }],
  });
  let environment = created;
  try {
    // Node preparation's marker, without which the kubelet's unit does not start: the machine's
    // kubeadm and kubelet are the built programs, so nothing is prepared.
    await writeFile(
      join(place.root, 'etc', 'kubernetes', 'kubelet.env'),
      '# the test machine: kubeadm and the kubelet are the built programs\n',
      { mode: 0o644 },
    );
    environment = await bootNode(created);
    await importImages(openMachine({ provider: 'namespaces', name: place.name, dir: place.root }), images.archives);
  } catch (err) {
    await destroyNode(environment);
    throw err;
  }
  const units = JSON.parse(await readFile(layout.units, 'utf8')) as UnitsFile;
  const kubeadm = join(place.root, 'bin', 'kubeadm');
  await mkdir(dirname(kubeadm), { recursive: true });
  const [nsenter, args] = inNamespaces({ net: netns, mount: environment.mountNamespace }, [
    'env',
    `PATH=${units.env['PATH'] ?? ''}`,
    'HOME=/root',
    join(binDir, 'kubeadm'),
  ]);
  await writeFile(
    kubeadm,
    [
      '#!/bin/sh',
      "# The real kubeadm on this node's machine: its namespaces, and its PATH with its systemctl first.",
      `exec ${[nsenter, ...args].map(shellQuote).join(' ')} "$@"`,
      '',
    ].join('\n'),
  );
  await chmod(kubeadm, 0o755);
  const machine: TestMachine = {
    environment,
    kubeadm,
    kubeadmNode: {
      patchesDir: layout.kubeadmPatches,
      ignorePreflightErrors: IGNORED_PREFLIGHT_CHECKS,
      imagePullPolicy: 'Never',
    },
    startKubelet: () => startUnit(machine.environment, 'kubelet'),
    reboot: async () => {
      await shutdownNode(machine.environment);
      await resetForBoot(machine.environment);
      machine.environment = await bootNode(machine.environment);
    },
    destroy: () => destroyNode(machine.environment),
  };
  return machine;
}
