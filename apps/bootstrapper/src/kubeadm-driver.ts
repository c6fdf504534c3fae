import { readFile, writeFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { clusterConfigMap, initConfiguration, joinConfiguration, runKubeadm } from '@constellation/kubeadm';
import type { ClusterConfig, InitConfigInput, JoinConfigInput } from '@constellation/kubeadm';
import type { NodeContext } from './node-context.js';
import { errorMessage } from '@constellation/errors';

/** Runs kubeadm with the node's settings; its output goes to the node's log. */
async function kubeadm(context: NodeContext, args: string[]): Promise<void> {
  const log = context.logger.child({ component: 'kubeadm' });
  await runKubeadm(args, {
    ...context.kubeadm,
    onOutput: (line) => {
      context.recentLog.append(Buffer.from(`kubeadm: ${line}\n`));
      log.debug(line);
    },
  });
}

export async function kubeadmInit(context: NodeContext, input: InitConfigInput): Promise<void> {
  await mkdir(context.paths.kubeadmDir, { recursive: true });
  const file = join(context.paths.kubeadmDir, 'kubeadm-init.yaml');
  await writeFile(file, initConfiguration(input), { mode: 0o600 });
  await kubeadm(context, ['init', '--config', file, '-v=5']);
}

/** kubeadm join, up to three attempts (the API server may still settle after another node's join). */
export async function kubeadmJoin(context: NodeContext, input: JoinConfigInput): Promise<void> {
  await mkdir(context.paths.kubeadmDir, { recursive: true });
  const file = join(context.paths.kubeadmDir, 'kubeadm-join.yaml');
  await writeFile(file, joinConfiguration(input), { mode: 0o600 });
  let last: unknown;
  for (let attempt = 1; attempt <= 3; attempt++) {
    try {
      await kubeadm(context, ['join', '--config', file, '-v=5']);
      return;
    } catch (err) {
      last = err;
      context.logger.warn('kubeadm join failed', { attempt, error: errorMessage(err) });
    }
  }
  throw last;
}

/** A client for the new cluster, from the admin kubeconfig kubeadm wrote. */
export function adminClient(context: NodeContext): k8s.CoreV1Api {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(context.paths.adminConf);
  return kc.makeApiClient(k8s.CoreV1Api);
}

/** Polls the API server until it answers, within `timeoutMs`. */
export async function waitForApiServer(core: k8s.CoreV1Api, timeoutMs: number): Promise<void> {
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
export async function publishClusterConfig(core: k8s.CoreV1Api, config: ClusterConfig): Promise<void> {
  await core.createNamespacedConfigMap({ namespace: 'kube-system', body: clusterConfigMap(config) });
}

export async function readAdminKubeconfig(context: NodeContext): Promise<Buffer> {
  return readFile(context.paths.adminConf);
}
