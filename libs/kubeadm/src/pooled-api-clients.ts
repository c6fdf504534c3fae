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
  /** A kept connection idle this long is closed (default 30 s). */
  idleConnectionMs?: number;
}

/**
 * Well under kube-apiserver's 90 s IdleTimeout: a client reusing a connection as the server closes
 * it gets ECONNRESET, and Node's agent, unlike Go's transport, does not send the request again. With
 * a timeout of its own, the agent also honours a shorter one a server announces (Keep-Alive header).
 */
const DEFAULT_IDLE_CONNECTION_MS = 30_000;

/**
 * The kubeconfig's authentication with one connection pool kept alive across requests. The
 * kubeconfig makes a new agent, so a new connection and TLS handshake, for every request. Headers
 * (a rotating service account token) are still applied per request; the agent's TLS options (CA,
 * client certificate) are the ones the kubeconfig gave the first request.
 */
function pooledAuthentication(kc: KubeConfig, idleConnectionMs: number): SecurityAuthentication {
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
          ? new HttpsAgent({ ...made.options, keepAlive: true, timeout: idleConnectionMs })
          : new HttpAgent({ keepAlive: true, timeout: idleConnectionMs });
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
    authMethods: { default: pooledAuthentication(kc, options.idleConnectionMs ?? DEFAULT_IDLE_CONNECTION_MS) },
    ...(options.timeoutMs === undefined ? {} : { promiseMiddleware: [timeoutMiddleware(options.timeoutMs)] }),
  });
}
