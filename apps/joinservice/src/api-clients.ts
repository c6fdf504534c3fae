import * as k8s from '@kubernetes/client-node';
import type { RequestContext, ResponseContext } from '@kubernetes/client-node';

/** The API clients the ticket logic uses; every call they make is bounded by `timeoutMs`. */
export interface ApiClients {
  core: k8s.CoreV1Api;
  coordination: k8s.CoordinationV1Api;
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
    authMethods: { default: kc },
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
