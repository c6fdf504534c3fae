/** What a node's containerd is configured with beyond the standard paths of its mount namespace. */
export interface ContainerdSettings {
  /** The built runc. */
  runc: string;
  /** The pod sandbox image, as kubeadm names it (imported beforehand: nothing is pulled). */
  sandboxImage: string;
  /** CNI plugin programs (Debian's containernetworking-plugins). */
  cniBinDir: string;
  /** containerd's "opt" directory, which is host-wide by default. */
  optDir: string;
  /** Per-registry settings (`<registry>/hosts.toml`: mirrors), read at each pull. */
  registryHostsDir: string;
}

const tomlString = (value: string): string => `'${value.replaceAll("'", '')}'`;

/**
 * containerd 2's configuration (version 3) for one node. The standard paths are the node's own
 * through its bind mounts. NRI is off: its socket and plugin directories are host-wide.
 * `restrict_oom_score_adj`: without CAP_SYS_RESOURCE (as in these machines' sandbox) lowering a
 * process's oom_score_adj is refused, and every pod sandbox would fail.
 */
export function containerdConfig(settings: ContainerdSettings): string {
  return `version = 3
root = '/var/lib/containerd'
state = '/run/containerd'
imports = []
disabled_plugins = ['io.containerd.nri.v1.nri']

[grpc]
  address = '/run/containerd/containerd.sock'

[plugins]
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = ${tomlString(settings.sandboxImage)}
    [plugins.'io.containerd.cri.v1.images'.registry]
      config_path = ${tomlString(settings.registryHostsDir)}

  [plugins.'io.containerd.cri.v1.runtime']
    restrict_oom_score_adj = true
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = 'runc'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = 'io.containerd.runc.v2'
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          BinaryName = ${tomlString(settings.runc)}
          SystemdCgroup = false
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = [${tomlString(settings.cniBinDir)}]
      conf_dir = '/etc/cni/net.d'

  [plugins.'io.containerd.internal.v1.opt']
    path = ${tomlString(settings.optDir)}
`;
}

/**
 * The node's pod network: a bridge with addresses from the node's own pod subnet, and host ports.
 * Pods on other nodes are reached through routes in each node's network namespace (see
 * node-network.ts).
 */
export function cniConfig(podSubnet: string): string {
  return `${JSON.stringify(
    {
      cniVersion: '1.0.0',
      name: 'mini',
      plugins: [
        {
          type: 'bridge',
          bridge: 'cni0',
          isGateway: true,
          ipMasq: false,
          hairpinMode: true,
          ipam: { type: 'host-local', ranges: [[{ subnet: podSubnet }]], routes: [{ dst: '0.0.0.0/0' }] },
        },
        // hostPort: the kubelet passes a pod's port mappings, the plugin forwards the node's port.
        { type: 'portmap', capabilities: { portMappings: true } },
      ],
    },
    null,
    2,
  )}\n`;
}

/**
 * A registry's hosts.toml: pulls from `upstream` (`registry.k8s.io`) go to `mirror` first, over
 * plain HTTP (a registry on mini's own bridge), and to the upstream itself only when the mirror
 * fails.
 */
export function registryMirrorHosts(upstream: string, mirror: string): string {
  return `server = ${tomlString(`https://${upstream}`)}

[host.${tomlString(mirror)}]
  capabilities = ['pull', 'resolve']
`;
}
