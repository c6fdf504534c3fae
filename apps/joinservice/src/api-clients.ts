import * as k8s from '@kubernetes/client-node';
import { pooledApiConfiguration } from '@constellation/kubeadm';

/** The API clients the ticket logic uses; every call they make is bounded by `timeoutMs`. */
export interface ApiClients {
  core: k8s.CoreV1Api;
  coordination: k8s.CoordinationV1Api;
}

/**
 * Clients for the kubeconfig's current cluster whose requests are aborted after `timeoutMs`: an API
 * server that stops answering makes a join fail fast with a retryable refusal, instead of holding
 * the node's call (and a ticket slot) until its deadline. They share one pool of kept-alive
 * connections: a join makes several API writes, and a handshake per write was part of every
 * join's cost.
 */
export function boundedApiClients(kc: k8s.KubeConfig, timeoutMs: number): ApiClients {
  const configuration = pooledApiConfiguration(kc, { timeoutMs });
  return { core: new k8s.CoreV1Api(configuration), coordination: new k8s.CoordinationV1Api(configuration) };
}
