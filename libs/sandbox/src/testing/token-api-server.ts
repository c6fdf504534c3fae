import * as k8s from '@kubernetes/client-node';
import { KubeApiServer } from '../kube-api-server.js';

/** A cluster admin's bearer token (group system:masters) on the stand-in `startTokenApiServer` starts. */
export const ADMIN_TOKEN = 'admin-token-for-tests-only';
/** A user's bearer token there: authenticated, granted nothing. */
export const USER_TOKEN = 'user-token-for-tests-only';

/** The API stand-in over plain HTTP, authenticating ADMIN_TOKEN and USER_TOKEN like kube-apiserver's static tokens. */
export function startTokenApiServer(): Promise<KubeApiServer> {
  return KubeApiServer.start({
    authentication: {
      staticTokens: [
        { token: ADMIN_TOKEN, user: 'kubernetes-admin', uid: 'admin', groups: ['system:masters'] },
        { token: USER_TOKEN, user: 'someone', uid: 'someone', groups: [] },
      ],
    },
  });
}

/** A kubeconfig for `api` (plain HTTP) that authenticates with `token`. */
export function kubeConfigWithToken(api: KubeApiServer, token: string): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'test', server: api.url, skipTLSVerify: true }], // plain HTTP stand-in
    users: [{ name: 'user', token }],
    contexts: [{ name: 'test', cluster: 'test', user: 'user' }],
    currentContext: 'test',
  });
  return kc;
}

/** A core/v1 client of `api` (plain HTTP) that authenticates with `token`. */
export function coreApiWithToken(api: KubeApiServer, token: string): k8s.CoreV1Api {
  return kubeConfigWithToken(api, token).makeApiClient(k8s.CoreV1Api);
}
