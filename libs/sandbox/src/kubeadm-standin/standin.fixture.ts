// Test fixture: the kubeadm stand-in installed as `kubeadm` for a node root, its control plane in a
// network namespace of the test's own (kubeadm advertises no loopback address), the programs from
// the run's build. Everything it starts is stopped by `cleanup()`.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createNetworkNamespace, deleteNetworkNamespace, locateKubernetesPrograms } from '@constellation/control-plane';
import type { NetworkNamespace } from '@constellation/control-plane';
import { installTypeScriptCommand, kubernetesBinDir, repoRoot, tempDirForTest } from '@constellation/testing';
import { stringify } from 'yaml';
import { stopApiServer } from './control-plane-stop.js';
import { BIN_DIR_ENV, NETNS_ENV } from './standin-env.js';

export const KUBEADM_API = 'kubeadm.k8s.io/v1beta4';

export interface StandinNode {
  root: string;
  /** Runs the installed stand-in; resolves with its exit code and output (never rejects on an exit). */
  run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }>;
}

export interface StandinCluster {
  /** The control plane's network namespace: its `ip` is the address init advertises. */
  network: NetworkNamespace;
  /** The release of the built programs (the configuration's kubernetesVersion). */
  release: string;
  node(): Promise<StandinNode>;
  cleanup(): Promise<void>;
}

export async function standinCluster(): Promise<StandinCluster> {
  const { release } = await locateKubernetesPrograms(kubernetesBinDir());
  const network = await createNetworkNamespace();
  const roots: string[] = [];
  return {
    network,
    release,
    node: async () => {
      const root = await tempDirForTest();
      roots.push(root);
      const program = await installTypeScriptCommand(
        join(root, 'bin'),
        'kubeadm',
        join(repoRoot(), 'libs/sandbox/src/kubeadm-standin/main.ts'),
      );
      const env = {
        ...process.env,
        KUBEADM_STANDIN_ROOT: root,
        [BIN_DIR_ENV]: kubernetesBinDir(),
        [NETNS_ENV]: network.name,
      };
      return {
        root,
        run: async (args) => {
          try {
            const { stdout, stderr } = await promisify(execFile)(program, args, { env, timeout: 120_000 });
            return { code: 0, stdout, stderr };
          } catch (err) {
            const e = err as { code?: number; stdout?: string; stderr?: string };
            return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
          }
        },
      };
    },
    cleanup: async () => {
      for (const root of roots.splice(0)) await stopApiServer(root);
      await deleteNetworkNamespace(network);
    },
  };
}

/** An init configuration advertising the cluster's namespace address on kubeadm's port. */
export function initYaml(
  cluster: StandinCluster,
  init: Record<string, unknown> = {},
  clusterConfig: Record<string, unknown> = {},
): string {
  return [
    {
      apiVersion: KUBEADM_API,
      kind: 'InitConfiguration',
      nodeRegistration: { name: 'cp-0' },
      localAPIEndpoint: { advertiseAddress: cluster.network.ip, bindPort: 6443 },
      ...init,
    },
    { apiVersion: KUBEADM_API, kind: 'ClusterConfiguration', kubernetesVersion: cluster.release, ...clusterConfig },
  ]
    .map((d) => stringify(d))
    .join('---\n');
}
