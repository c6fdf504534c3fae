import { KUBERNETES_API_CALL_RETRY_MS } from './config-defaults.js';
import type { Taint } from './config-defaults.js';
import type { Credential } from './https-json.js';
import { httpsJson } from './https-json.js';

/*
 * kubeadm's mark-control-plane phase (cmd/kubeadm/app/phases/markcontrolplane/markcontrolplane.go
 * MarkControlPlane, markControlPlaneNode) through apiclient.PatchNode
 * (cmd/kubeadm/app/util/apiclient/idempotency.go), with kubeadm's admin credentials (NodeRestriction
 * forbids a kubelet to label itself node-role.kubernetes.io/* or change its taints).
 */

/** markcontrolplane.go labelsToAdd. */
const LABELS = ['node-role.kubernetes.io/control-plane', 'node.kubernetes.io/exclude-from-external-load-balancers'];

/** v1.Taint.ToString: key[=value]:effect. */
export function taintString(taint: Taint): string {
  const value = taint.value ?? '';
  if (taint.effect === '') return value === '' ? taint.key : `${taint.key}=${value}:`;
  return value === '' ? `${taint.key}:${taint.effect}` : `${taint.key}=${value}:${taint.effect}`;
}

const sameTaint = (a: Taint, b: Taint): boolean =>
  a.key === b.key && (a.value ?? '') === (b.value ?? '') && a.effect === b.effect && a.timeAdded === b.timeAdded;

interface NodeBody {
  metadata?: { labels?: Record<string, string> };
  spec?: { taints?: Taint[] };
  message?: unknown;
}

/**
 * Labels the Node and sets its taints to `taints` followed by those it already has that are not
 * among them (markControlPlaneNode). PatchNode retries for `timeoutMs` (timeouts.kubernetesAPICall)
 * while the Node is missing or not yet labelled kubernetes.io/hostname, and on timeouts and
 * conflicts; on expiry it returns the last error, which is none when the Node existed unlabelled.
 */
export async function markControlPlane(
  server: string,
  caPem: string,
  admin: Credential,
  nodeName: string,
  taints: readonly Taint[],
  timeoutMs: number,
  print: (line: string) => void,
): Promise<void> {
  print(
    `[mark-control-plane] Marking the node ${nodeName} as control-plane by adding the labels: [${LABELS.join(' ')}]`,
  );
  if (taints.length > 0)
    print(
      `[mark-control-plane] Marking the node ${nodeName} as control-plane by adding the taints [${taints.map(taintString).join(' ')}]`,
    );
  const url = `${server}/api/v1/nodes/${nodeName}`;
  const deadline = Date.now() + timeoutMs;
  let lastError: string | undefined;
  for (;;) {
    const got = await httpsJson(url, { ca: caPem, credential: admin }).catch((err: unknown) => err);
    if (got instanceof Error) lastError = got.message;
    else if (typeof got === 'object' && got !== null && 'status' in got) {
      const { status, body } = got as { status: number; body: NodeBody };
      if (status !== 200) lastError = describe(status, body);
      else if (body.metadata?.labels?.['kubernetes.io/hostname'] !== undefined) {
        const existing = body.spec?.taints ?? [];
        const patch = {
          metadata: { labels: Object.fromEntries(LABELS.map((label) => [label, ''])) },
          // Node.spec.taints has no patch merge key: a strategic merge patch replaces the list.
          spec: { taints: [...taints, ...existing.filter((t) => !taints.some((c) => sameTaint(c, t)))] },
        };
        const res = await httpsJson(url, {
          method: 'PATCH',
          ca: caPem,
          credential: admin,
          contentType: 'application/strategic-merge-patch+json',
          body: patch,
        });
        if (res.status === 200) return;
        lastError = `error patching Node "${nodeName}": ${describe(res.status, res.body as NodeBody)}`;
        // apierrors.IsTimeout, IsConflict, IsServerTimeout, IsServiceUnavailable: try again.
        if (![504, 409, 500, 503].includes(res.status) || (res.status === 500 && !isServerTimeout(res.body)))
          throw new Error(lastError);
      }
    }
    if (Date.now() + KUBERNETES_API_CALL_RETRY_MS > deadline) {
      if (lastError === undefined) return;
      throw new Error(lastError);
    }
    await new Promise((resolve) => setTimeout(resolve, KUBERNETES_API_CALL_RETRY_MS));
  }
}

/** apierrors.IsServerTimeout: a Status with reason ServerTimeout (HTTP 500). */
function isServerTimeout(body: unknown): boolean {
  return (body as { reason?: unknown } | undefined)?.reason === 'ServerTimeout';
}

function describe(status: number, body: NodeBody | undefined): string {
  const message = body?.message;
  return typeof message === 'string' ? message : `status ${status}`;
}
