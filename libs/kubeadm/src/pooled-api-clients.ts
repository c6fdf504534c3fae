import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { ServerConfiguration, createConfiguration } from '@kubernetes/client-node';
import type {
  Configuration,
  KubeConfig,
  Middleware,
  RequestContext,
  SecurityAuthentication,
} from '@kubernetes/client-node';

export interface PooledApiOptions {
  /** Every request is aborted after this long (none: client-node's own, unbounded). */
  timeoutMs?: number;
}

/**
 * The kubeconfig's authentication with one connection pool kept alive across requests. The
 * kubeconfig makes a new agent, so a new connection and TLS handshake, for every request. Headers
 * (a rotating service account token) are still applied per request; the agent's TLS options (CA,
 * client certificate) are the ones the kubeconfig gave the first request.
 */
function pooledAuthentication(kc: KubeConfig): SecurityAuthentication {
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

function timeoutMiddleware(timeoutMs: number): Middleware {
  return {
    pre: (context) => {
      context.setSignal(AbortSignal.timeout(timeoutMs));
      return Promise.resolve(context);
    },
    post: (context) => Promise.resolve(context),
  };
}

/**
 * A client configuration for the kubeconfig's current cluster whose API clients share one pool
 * of kept-alive connections: `new k8s.CoreV1Api(configuration)` and so on.
 */
export function pooledApiConfiguration(kc: KubeConfig, options: PooledApiOptions = {}): Configuration {
  const cluster = kc.getCurrentCluster();
  if (cluster === null) throw new Error('kubeconfig has no current cluster');
  return createConfiguration({
    baseServer: new ServerConfiguration(cluster.server, {}),
    authMethods: { default: pooledAuthentication(kc) },
    ...(options.timeoutMs === undefined ? {} : { promiseMiddleware: [timeoutMiddleware(options.timeoutMs)] }),
  });
}
