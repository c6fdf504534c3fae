import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { Kubectl, locateKubernetesPrograms, tokenKubeconfig } from '@constellation/kubernetes-programs';
import { sharedKubernetes, startApiRelay } from '@constellation/testing';
import type { ApiRelay } from '@constellation/testing';

/** What a call that must fail threw. */
export const failure = (call: Promise<unknown>): Promise<unknown> =>
  call.then(
    () => {
      throw new Error('the call succeeded');
    },
    (err: unknown) => err,
  );

/** The built kubectl as system:masters on the run's shared control plane. */
export async function sharedAdminKubectl(): Promise<Kubectl> {
  const k = sharedKubernetes();
  return new Kubectl(await locateKubernetesPrograms(k.binDir), k.superAdminKubeconfig);
}

/** A client for the shared control plane as system:masters (kubeadm's super-admin.conf). */
export function sharedAdminCore(): k8s.CoreV1Api {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(sharedKubernetes().superAdminKubeconfig);
  return kc.makeApiClient(k8s.CoreV1Api);
}

/** A client that authenticates with a bearer token at `server` (the API server, or a relay in front of it). */
export function coreWithToken(server: string, token: string): k8s.CoreV1Api {
  const kc = new k8s.KubeConfig();
  kc.loadFromString(tokenKubeconfig({ server, caPem: sharedKubernetes().caCertificatePem, token }));
  return kc.makeApiClient(k8s.CoreV1Api);
}

/**
 * A namespace of the test file's own on the shared control plane, with a service account that may
 * get and create ConfigMaps in it (what the claim records need, and no more) and a token for it:
 * a plain user, whose requests kube-apiserver may shed (it never sheds system:masters').
 */
export interface RecordsNamespace {
  name: string;
  admin: k8s.CoreV1Api;
  /** The service account's token (a credential: never log it). */
  token: string;
  delete(): Promise<void>;
}

export async function recordsNamespace(prefix: string): Promise<RecordsNamespace> {
  const kubectl = await sharedAdminKubectl();
  const name = `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`;
  await kubectl.run(['create', 'namespace', name]);
  const run = (...args: string[]): Promise<string> => kubectl.run(['-n', name, ...args]);
  await run('create', 'serviceaccount', 'records');
  await run('create', 'role', 'records', '--verb=get,create', '--resource=configmaps');
  await run('create', 'rolebinding', 'records', '--role=records', `--serviceaccount=${name}:records`);
  const token = (await run('create', 'token', 'records', '--duration=1h')).trim();
  return {
    name,
    admin: sharedAdminCore(),
    token,
    delete: async () => {
      await kubectl.run(['delete', 'namespace', name, '--wait=false']);
    },
  };
}

/** An HTTPS relay in front of the shared API server (serving with its certificate), for shed requests. */
export async function sharedApiRelay(): Promise<ApiRelay> {
  const k = sharedKubernetes();
  const pki = join(k.root, 'etc', 'kubernetes', 'pki');
  return startApiRelay({
    target: k.apiServerUrl,
    caPem: k.caCertificatePem,
    tls: {
      cert: await readFile(join(pki, 'apiserver.crt'), 'utf8'),
      key: await readFile(join(pki, 'apiserver.key'), 'utf8'),
    },
  });
}

/** The ConfigMaps in `namespace`, by name, with their data. */
export async function configMapsIn(
  core: k8s.CoreV1Api,
  namespace: string,
): Promise<Map<string, Record<string, string>>> {
  const list = await core.listNamespacedConfigMap({ namespace });
  return new Map(list.items.map((c) => [c.metadata?.name ?? '', c.data ?? {}]));
}

/** Whether ConfigMap `namespace/name` exists. */
export async function recordedIn(core: k8s.CoreV1Api, namespace: string, name: string): Promise<boolean> {
  return (await configMapsIn(core, namespace)).has(name);
}

/**
 * A client for `token` that, just before its first POST (creating a record), has `peer` run: another
 * replica acting between this one's check and its record, through client-node's request middleware.
 */
export function coreWithPeerBeforeFirstPost(token: string, peer: () => Promise<void>): k8s.CoreV1Api {
  const kc = new k8s.KubeConfig();
  kc.loadFromString(
    tokenKubeconfig({ server: sharedKubernetes().apiServerUrl, caPem: sharedKubernetes().caCertificatePem, token }),
  );
  let played = false;
  const middleware: k8s.Middleware = {
    pre: async (context) => {
      if (!played && context.getHttpMethod() === k8s.HttpMethod.POST) {
        played = true;
        await peer();
      }
      return context;
    },
    post: (context) => Promise.resolve(context),
  };
  const cluster = kc.getCurrentCluster();
  if (cluster === null) throw new Error('kubeconfig has no current cluster');
  return new k8s.CoreV1Api(
    k8s.createConfiguration({
      baseServer: new k8s.ServerConfiguration(cluster.server, {}),
      authMethods: { default: kc },
      promiseMiddleware: [middleware],
    }),
  );
}
