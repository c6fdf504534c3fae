import { access } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';

/*
 * The preflight checks of kubeadm (cmd/kubeadm/app/preflight/checks.go) that concern what the
 * stand-in writes and runs: InitNodeChecks' PortOpenCheck on the API server's bind port and
 * FileAvailableCheck on each static Pod manifest; JoinNodeChecks' FileAvailableCheck on
 * kubelet.conf, bootstrap-kubelet.conf and, for a worker, the CA certificate. Checks are named
 * and worded as kubeadm names them; RunChecks turns those the node's ignorePreflightErrors list
 * (or "all") names into warnings. Paths are shown as on a node, without the stand-in's root.
 */

export interface PreflightCheck {
  name: string;
  /** undefined: passed. */
  run: () => Promise<string | undefined>;
}

/** FileAvailableCheck: the file must not exist. */
function fileAvailable(root: string, path: string): PreflightCheck {
  return {
    name: `FileAvailable-${path.replaceAll('/', '-')}`,
    run: async () => {
      try {
        await access(join(root, path));
        return `${path} already exists`;
      } catch {
        return undefined;
      }
    },
  };
}

/**
 * PortOpenCheck: net.Listen("tcp", ":<port>") must succeed (every address, as Go binds it). For a
 * control plane in another network namespace, where this process cannot bind, a connection to
 * its advertised address that is accepted means the port is in use.
 */
function portOpen(port: number, otherNamespaceAddress: string | undefined): PreflightCheck {
  const inUse = `Port ${port} is in use`;
  return {
    name: `Port-${port}`,
    run: () =>
      new Promise((resolve) => {
        if (otherNamespaceAddress !== undefined) {
          const socket = connect({ host: otherNamespaceAddress, port, timeout: 2_000 });
          const answer = (failure: string | undefined): void => {
            socket.destroy();
            resolve(failure);
          };
          socket.once('connect', () => {
            answer(inUse);
          });
          socket.once('error', () => {
            answer(undefined);
          });
          socket.once('timeout', () => {
            answer(undefined);
          });
          return;
        }
        const server = createServer();
        server.once('error', () => {
          resolve(inUse);
        });
        server.listen(port, () => {
          server.close(() => {
            resolve(undefined);
          });
        });
      }),
  };
}

const MANIFESTS = '/etc/kubernetes/manifests';
/** The static Pod manifests kubeadm's control-plane and etcd phases write. */
const STATIC_POD_COMPONENTS = ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'etcd'] as const;

/** InitNodeChecks, the stand-in's part; `otherNamespaceAddress`: see portOpen. */
export function initNodeChecks(root: string, bindPort: number, otherNamespaceAddress?: string): PreflightCheck[] {
  return [
    portOpen(bindPort, otherNamespaceAddress),
    ...STATIC_POD_COMPONENTS.map((component) => fileAvailable(root, `${MANIFESTS}/${component}.yaml`)),
  ];
}

/** JoinNodeChecks, the stand-in's part (caCertPath is kubeadm's default). */
export function joinNodeChecks(root: string, controlPlane: boolean): PreflightCheck[] {
  return [
    fileAvailable(root, '/etc/kubernetes/kubelet.conf'),
    fileAvailable(root, '/etc/kubernetes/bootstrap-kubelet.conf'),
    ...(controlPlane ? [] : [fileAvailable(root, '/etc/kubernetes/pki/ca.crt')]),
  ];
}

/**
 * RunChecks: warnings for ignored failures go to `warn`; the other failures make one message, as
 * kubeadm prints it (undefined when none failed).
 */
export async function runChecks(
  checks: readonly PreflightCheck[],
  ignore: readonly string[],
  warn: (line: string) => void,
): Promise<string | undefined> {
  const errors: string[] = [];
  for (const check of checks) {
    const failure = await check.run();
    if (failure === undefined) continue;
    if (ignore.includes('all') || ignore.includes(check.name.toLowerCase()))
      warn(`\t[WARNING ${check.name}]: ${failure}`);
    else errors.push(`\t[ERROR ${check.name}]: ${failure}\n`);
  }
  if (errors.length === 0) return undefined;
  return `[preflight] Some fatal errors occurred:\n${errors.join('')}[preflight] If you know what you are doing, you can make a check non-fatal with \`--ignore-preflight-errors=...\``;
}
