import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import * as k8s from '@kubernetes/client-node';
import type { RequestContext, ResponseContext, SecurityAuthentication } from '@kubernetes/client-node';

/** The API clients the ticket logic uses; every call they make is bounded by `timeoutMs`. */
export interface ApiClients {
  core: k8s.CoreV1Api;
  coordination: k8s.CoordinationV1Api;
}

/**
 * The kubeconfig's authentication with one connection pool kept alive across requests. The
 * kubeconfig makes a new agent, so a new connection and TLS handshake, for every request; a join
 * makes several API writes, and the handshakes were part of every join's cost. Headers (a
 * rotating service account token) are still applied per request; the agent's TLS options (CA,
 * client certificate) are the ones the kubeconfig gave the first request.
 */
function pooledAuthentication(kc: k8s.KubeConfig): SecurityAuthentication {
  let pool: HttpAgent | undefined;
  return {
    getName: () => 'kubeconfig (pooled connections)',
    async applySecurityAuthentication(context: RequestContext): Promise<void> {
      await kc.applySecurityAuthentication(context);
      const made = context.getAgent();
      const kind = made?.constructor;
      // Proxy agents (HTTP CONNECT, SOCKS) are other classes: they keep the per-request agent.
      if (made === undefined || (kind !== HttpsAgent && kind !== HttpAgent)) return;
      pool ??=
        made instanceof HttpsAgent
          ? new HttpsAgent({ ...made.options, keepAlive: true })
          : new HttpAgent({ keepAlive: true });
      made.destroy();
      context.setAgent(pool);
    },
  };
}

/**
 * Clients for the kubeconfig's current cluster whose requests are aborted after `timeoutMs`: an API
 * server that stops answering makes a join fail fast with a retryable refusal, instead of holding
 * the node's call (and a ticket slot) until its deadline.
 */
export function boundedApiClients(kc: k8s.KubeConfig, timeoutMs: number): ApiClients {
  const cluster = kc.getCurrentCluster();
  if (cluster === null) throw new Error('kubeconfig has no current cluster');
  const configuration = k8s.createConfiguration({
    baseServer: new k8s.ServerConfiguration(cluster.server, {}),
    authMethods: { default: pooledAuthentication(kc) },
    promiseMiddleware: [
      {
        pre: (context: RequestContext) => {
          context.setSignal(AbortSignal.timeout(timeoutMs));
          return Promise.resolve(context);
        },
        post: (context: ResponseContext) => Promise.resolve(context),
      },
    ],
  });
  return { core: new k8s.CoreV1Api(configuration), coordination: new k8s.CoordinationV1Api(configuration) };
}
