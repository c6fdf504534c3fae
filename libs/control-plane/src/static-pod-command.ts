import { parse } from 'yaml';

/** The program and arguments of a static pod's one container, as kubeadm wrote them. */
export interface StaticPodCommand {
  /** The program's name, e.g. "kube-apiserver". */
  program: string;
  args: string[];
}

/** The host paths kubeadm's control-plane manifests refer to; a process run elsewhere moves them. */
export const KUBEADM_HOST_PATHS = ['/etc/kubernetes', '/var/lib/etcd'] as const;

/**
 * Reads a static-pod manifest written by `kubeadm init phase control-plane` or `etcd local` and
 * returns its container's command line, with every argument that names one of kubeadm's host
 * paths moved under `root` (the directory kubeadm ran in with `--rootfs`).
 */
export function staticPodCommand(manifestYaml: string, root: string): StaticPodCommand {
  const pod = parse(manifestYaml) as {
    kind?: unknown;
    spec?: { containers?: { command?: unknown }[] };
  } | null;
  if (pod?.kind !== 'Pod') throw new Error('the manifest is not a Pod');
  const containers = pod.spec?.containers ?? [];
  if (containers.length !== 1) {
    throw new Error(`the manifest has ${containers.length} containers; kubeadm's control-plane pods have one`);
  }
  const command = containers[0]?.command;
  if (!Array.isArray(command) || command.length === 0 || !command.every((c) => typeof c === 'string')) {
    throw new Error("the manifest's container has no command of strings");
  }
  const [program, ...args] = command;
  return { program: program ?? '', args: args.map((arg) => relocateHostPaths(arg, root)) };
}

const HOST_PATH = new RegExp(
  `(^|[=,])(${KUBEADM_HOST_PATHS.map((p) => p.replace(/\//g, '\\/')).join('|')})(?=/|,|$)`,
  'g',
);

/** `--flag=/etc/kubernetes/pki/ca.crt` becomes `--flag=<root>/etc/kubernetes/pki/ca.crt`. */
export function relocateHostPaths(arg: string, root: string): string {
  return arg.replace(HOST_PATH, (_match, before: string, path: string) => `${before}${root}${path}`);
}
