import type { Credential } from './https-json.js';
import { httpsJson } from './https-json.js';

/*
 * kubeadm's apiclient.GetConfigMapWithShortRetry (cmd/kubeadm/app/util/apiclient/idempotency.go,
 * Kubernetes 1.30 on, kubernetes/kubernetes#122811): wait.PollUntilContextTimeout with a fixed
 * 50 ms interval and 350 ms timeout, the first try at once. Any error is tried again, an error
 * answer or a request that got none (connection refused, reset); when the time is up the last
 * error is returned. Join's preflight reads kubeadm-config (getInitConfigurationFromCluster) and
 * kubelet-config (componentconfigs fromConfigMap) with it. It is not KubernetesAPICall's
 * 500 ms / timeouts.kubernetesAPICall poll: kubeadm used that for a few weeks of 1.30's
 * development and went back to the short one (kubernetes/kubeadm#2995).
 */

export const SHORT_RETRY_INTERVAL_MS = 50;
export const SHORT_RETRY_TIMEOUT_MS = 350;

/** A ConfigMap's data, as GET answered it. */
export type ConfigMapData = Record<string, string>;

/** The ConfigMap kube-system/<name>; throws the last error, worded as client-go words it. */
export async function getConfigMapWithShortRetry(
  server: string,
  caPem: string,
  credential: Credential,
  name: string,
): Promise<ConfigMapData> {
  const url = `${server}/api/v1/namespaces/kube-system/configmaps/${name}`;
  const start = Date.now();
  const deadline = start + SHORT_RETRY_TIMEOUT_MS;
  // When the poll last took a tick of its ticker (ticks at 50, 100, ... ms from the start).
  let tookTick = start;
  for (;;) {
    const outcome = await getOnce(url, caPem, credential);
    if (typeof outcome !== 'string') return outcome;
    // loopConditionUntilContext: no try once the context has ended. A ticker keeps one missed
    // tick, so after a slow try the next one starts at once; ticks missed beyond it are dropped.
    const tick = start + (Math.floor((tookTick - start) / SHORT_RETRY_INTERVAL_MS) + 1) * SHORT_RETRY_INTERVAL_MS;
    if (Date.now() >= deadline || tick >= deadline) throw new Error(outcome);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, tick - Date.now())));
    tookTick = Math.max(tick, Date.now());
  }
}

/** One GET: the data, or the error's text (a Status message, or Go's net/http wording). */
async function getOnce(url: string, caPem: string, credential: Credential): Promise<ConfigMapData | string> {
  let res;
  try {
    res = await httpsJson(url, { ca: caPem, credential });
  } catch (err) {
    return transportError(url, err);
  }
  const body = res.body as { message?: unknown; data?: ConfigMapData } | null;
  if (res.status === 200) return body?.data ?? {};
  return typeof body?.message === 'string' ? body.message : `status ${res.status}`;
}

/**
 * net/http's *url.Error for a request that got no answer: `Get "<url>": <cause>`, with the
 * cause as Go's net package words the common ones (dial tcp <address>: connect: connection
 * refused; read tcp ...: connection reset by peer is shown as Node names it).
 */
function transportError(url: string, err: unknown): string {
  const e = err as { code?: unknown; address?: unknown; port?: unknown; message?: unknown };
  if (e.code === 'ECONNREFUSED' && typeof e.address === 'string' && typeof e.port === 'number')
    return `Get "${url}": dial tcp ${e.address}:${e.port}: connect: connection refused`;
  return `Get "${url}": ${typeof e.message === 'string' ? e.message : String(err)}`;
}
