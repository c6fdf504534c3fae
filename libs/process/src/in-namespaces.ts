/** Namespaces to run a program in: a network namespace by its `ip netns` name, a mount namespace by its file. */
export interface Namespaces {
  /** The name under /run/netns. */
  net?: string;
  /** The file a persistent mount namespace is kept by. */
  mount?: string;
}

/**
 * The command line that runs `command` in `namespaces`. nsenter, not `ip netns exec`: the latter
 * remounts /sys, which hides the cgroup mounts from the kubelet and runc.
 */
export function inNamespaces(namespaces: Namespaces, command: readonly string[]): [string, string[]] {
  return [
    'nsenter',
    [
      ...(namespaces.net === undefined ? [] : [`--net=/run/netns/${namespaces.net}`]),
      ...(namespaces.mount === undefined ? [] : [`--mount=${namespaces.mount}`]),
      '--',
      ...command,
    ],
  ];
}
