import { join } from 'node:path';

/**
 * The directories a machine has of its own, as bind mounts in its mount namespace: every program
 * of the node (kubeadm, the kubelet, containerd, the pods' host paths) uses the standard paths,
 * and each node's files stay in its own directory on the host.
 */
export const NODE_BIND_MOUNTS = [
  '/etc/kubernetes',
  '/etc/cni/net.d',
  '/var/lib/kubelet',
  '/var/lib/etcd',
  '/var/lib/containerd',
  '/var/lib/cni',
  '/var/log/pods',
  '/var/log/containers',
  '/run/constellation',
  // The state partition's files in mini (the kubelet's serving certificate, installed components).
  '/run/state',
  '/run/containerd',
  // Pod network namespaces: containerd names them in /var/run/netns, which is the host's otherwise.
  '/run/netns',
] as const;

/** Directories that a reboot empties (tmpfs on a real machine). */
export const VOLATILE_DIRS = ['/run/containerd', '/run/netns'] as const;

/** Where a node's own files are, below its directory on the host. */
export interface NodeLayout {
  /** The node's directory on the host; the bind mounts' sources are below it. */
  dir: string;
  /** The node's /etc/hosts (every node's name and address: kubeadm looks its node name up). */
  hosts: string;
  /**
   * The node's /etc/resolv.conf: the host's resolver is not the node's (nothing leaves the machine),
   * so the node names itself, where no DNS server listens: a name outside the cluster fails at once.
   */
  resolvConf: string;
  containerdConfig: string;
  /** containerd's per-registry settings: `<registry>/hosts.toml` (a mirror while conformance runs). */
  registryHosts: string;
  cniConfig: string;
  /** kubeadm's patches directory of this node (the kubelet's cgroup settings). */
  kubeadmPatches: string;
  /** The unit runner's description of the node's units, its control socket and its logs. */
  units: string;
  unitsSocket: string;
  logs: string;
  /** Directory of the node's `systemctl`, first on its units' PATH. */
  sbin: string;
  /** What the environment was made with (for stopping and removing it again). */
  record: string;
}

export function nodeLayout(dir: string): NodeLayout {
  return {
    dir,
    hosts: join(dir, 'etc', 'hosts'),
    resolvConf: join(dir, 'etc', 'resolv.conf'),
    containerdConfig: join(dir, 'etc', 'containerd', 'config.toml'),
    registryHosts: join(dir, 'etc', 'containerd', 'certs.d'),
    cniConfig: join(dir, 'etc', 'cni', 'net.d', '10-mini.conflist'),
    kubeadmPatches: join(dir, 'etc', 'constellation', 'kubeadm-patches'),
    units: join(dir, 'units', 'units.json'),
    unitsSocket: join(dir, 'units', 'control.sock'),
    logs: join(dir, 'log'),
    sbin: join(dir, 'usr', 'local', 'sbin'),
    record: join(dir, 'units', 'environment.json'),
  };
}

/** The host directory behind `target` in the node's mount namespace. */
export const bindSource = (layout: NodeLayout, target: string): string => join(layout.dir, target);
