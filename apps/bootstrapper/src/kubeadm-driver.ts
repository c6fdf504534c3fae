import { readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pathExists } from '@constellation/files';
import type { CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import {
  clusterConfigMap,
  discoveryKubeconfig,
  initConfiguration,
  joinConfiguration,
  runKubeadm,
  writeAdmissionConfiguration,
} from '@constellation/kubeadm';
import type { ClusterConfig, DiscoveryCredentials, InitConfigInput, JoinConfigInput } from '@constellation/kubeadm';
import type { Logger } from '@constellation/logger';
import type { NodeContext } from './node-context.js';
import type { RecentLog } from './recent-log.js';
import { errorMessage } from '@constellation/errors';

/** What running kubeadm takes from the node: the program, where its config goes, and the logs. */
export interface KubeadmRunner {
  kubeadm: NodeContext['kubeadm'];
  kubeadmDir: string;
  /** The node's /etc/kubernetes, where kubeadm writes its kubeconfigs. */
  kubernetesDir: string;
  logger: Logger;
  recentLog: RecentLog;
}

export function kubeadmRunner(context: NodeContext): KubeadmRunner {
  const { kubeadm, logger, recentLog } = context;
  return {
    kubeadm,
    kubeadmDir: context.paths.kubeadmDir,
    kubernetesDir: dirname(context.paths.kubernetesPki),
    logger,
    recentLog,
  };
}

/** Runs kubeadm with the node's settings; its output goes to the node's log. */
async function kubeadm(runner: KubeadmRunner, args: string[]): Promise<void> {
  const log = runner.logger.child({ component: 'kubeadm' });
  await runKubeadm(args, {
    ...runner.kubeadm,
    onOutput: (line) => {
      runner.recentLog.append(Buffer.from(`kubeadm: ${line}\n`));
      log.debug(line);
    },
  });
}

/** Writes a kubeadm configuration file (0600: the init file names a token, the discovery file holds a key). */
async function writeKubeadmConfig(runner: KubeadmRunner, name: string, yaml: string): Promise<string> {
  await mkdir(runner.kubeadmDir, { recursive: true });
  const file = join(runner.kubeadmDir, name);
  await writeFile(file, yaml, { mode: 0o600 });
  return file;
}

export async function kubeadmInit(runner: KubeadmRunner, input: InitConfigInput): Promise<void> {
  const file = await writeKubeadmConfig(
    runner,
    'kubeadm-init.yaml',
    initConfiguration({ ...input, ...(runner.kubeadm.node === undefined ? {} : { node: runner.kubeadm.node }) }),
  );
  // The API server's static pod mounts it (Pod Security baseline by default).
  await writeAdmissionConfiguration(runner.kubernetesDir);
  // --skip-token-print: kubeadm's join command holds a token, and its output goes to the node log.
  await kubeadm(runner, ['init', '--config', file, '--skip-token-print', '-v=5']);
}

/** What kubeadm join's kubelet-start phase writes: once one exists, its preflight refuses another join. */
const KUBELET_START_FILES = ['kubelet.conf', 'bootstrap-kubelet.conf'];

/**
 * kubeadm join, up to three attempts while a failure left nothing behind (the API server may
 * still settle after another node's join; discovery writes nothing). An attempt that got as far
 * as kubelet-start is not repeated: kubeadm's preflight refuses a node that has its kubeconfigs
 * (FileAvailable checks), and the retries hid the failure that mattered behind that refusal.
 */
export async function kubeadmJoin(
  runner: KubeadmRunner,
  input: Omit<JoinConfigInput, 'discoveryFile'> & { discovery: DiscoveryCredentials },
): Promise<void> {
  const { discovery, ...join } = input;
  // kubeadm's file discovery with the ticket's CA and the kubelet's own certificate; kubeadm copies
  // the credential into bootstrap-kubelet.conf, so this copy of the key goes once the join is done.
  const discoveryFile = await writeKubeadmConfig(runner, 'discovery.conf', discoveryKubeconfig(discovery));
  try {
    const file = await writeKubeadmConfig(
      runner,
      'kubeadm-join.yaml',
      joinConfiguration({
        ...join,
        discoveryFile,
        ...(runner.kubeadm.node === undefined ? {} : { node: runner.kubeadm.node }),
      }),
    );
    // A control plane's API server mounts it, as the first one's does (kubeadm-config's ClusterConfiguration).
    if (input.controlPlane !== undefined) await writeAdmissionConfiguration(runner.kubernetesDir);
    let last: unknown;
    for (let attempt = 1; attempt <= 3; attempt++) {
      try {
        await kubeadm(runner, ['join', '--config', file, '-v=5']);
        return;
      } catch (err) {
        last = err;
        const started = await kubeletStarted(runner.kubernetesDir);
        runner.logger.warn('kubeadm join failed', { attempt, error: errorMessage(err), retried: !started });
        if (started) throw err;
      }
    }
    throw last;
  } finally {
    await rm(discoveryFile, { force: true });
  }
}

async function kubeletStarted(kubernetesDir: string): Promise<boolean> {
  const found = await Promise.all(KUBELET_START_FILES.map((name) => pathExists(join(kubernetesDir, name))));
  return found.includes(true);
}

/**
 * Clients for the new cluster, from the admin kubeconfig kubeadm wrote. The Kubernetes client is
 * the costliest library to load (about half of the bootstrapper's start) and only the first
 * control plane's init needs it: a dynamic import of a small local module keeps it from being
 * evaluated at start, while its named imports stay tree-shaken in the one-file bundle.
 */
export async function adminClients(adminConf: string): Promise<{ core: CoreV1Api; rbac: RbacAuthorizationV1Api }> {
  const { adminClients: load } = await import('./admin-clients.js');
  return load(adminConf);
}

/** Polls the API server until it answers, within `timeoutMs`. */
export async function waitForApiServer(core: CoreV1Api, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    try {
      await core.listNamespace();
      return;
    } catch (err) {
      last = errorMessage(err);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  throw new Error(`the API server did not answer within ${timeoutMs} ms: ${last}`);
}

/** Publishes the version and components joining nodes must use. */
export async function publishClusterConfig(core: CoreV1Api, config: ClusterConfig): Promise<void> {
  await core.createNamespacedConfigMap({ namespace: 'kube-system', body: clusterConfigMap(config) });
}

export async function readAdminKubeconfig(adminConf: string): Promise<Buffer> {
  return readFile(adminConf);
}
