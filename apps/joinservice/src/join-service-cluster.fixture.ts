// Test fixture: the real Kubernetes control plane, set up for the JoinService as a cluster's
// init sets it up: the constellation-cluster ConfigMap, the service's ServiceAccount and its RBAC
// from deploy/joinservice, and a kubeconfig with that account's token. Each fixture owns its
// control plane (and so kube-system: bootstrap tokens, the join Lease, the binding ConfigMaps).
import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { API_SERVER_PORT, startIsolatedControlPlane } from '@constellation/control-plane';
import { Kubectl, locateKubernetesPrograms, writeServiceAccountKubeconfig } from '@constellation/kubernetes-programs';
import type { IsolatedControlPlane } from '@constellation/control-plane';
import type { KubernetesPrograms } from '@constellation/kubernetes-programs';
import { clusterConfigMap } from '@constellation/kubeadm';
import type { ClusterConfig } from '@constellation/kubeadm';
import { kubernetesBinDir, repoRoot, startApiRelay } from '@constellation/testing';
import type { ApiRelay } from '@constellation/testing';

/** Bound for a hook or test that starts a fixture with its own control plane (about 5 s idle). */
export const CLUSTER_START_TIMEOUT_MS = 120_000;
/** Bound for a hook that stops one: kube-apiserver takes up to 10 s to end on SIGTERM. */
export const CLUSTER_STOP_TIMEOUT_MS = 60_000;

export const JOIN_SERVICE_ACCOUNT = 'system:serviceaccount:kube-system:join-service';

export interface JoinServiceCluster {
  readonly controlPlane: IsolatedControlPlane;
  readonly programs: KubernetesPrograms;
  /** kubectl as system:masters (kubeadm's super-admin.conf). */
  readonly admin: Kubectl;
  /** API clients as system:masters, to read what the service wrote. */
  readonly core: k8s.CoreV1Api;
  readonly coordination: k8s.CoordinationV1Api;
  /** `https://<ip>:6443` */
  readonly apiServerUrl: string;
  /** `<ip>:6443`: what the service's --api-server-endpoint names. */
  readonly apiServerEndpoint: string;
  readonly caCertificatePem: string;
  /** The control plane's `etc/kubernetes/pki`: the cluster CA the service signs with. */
  readonly pkiDir: string;
  /** Writes a kubeconfig (0600) with a token of the join-service ServiceAccount, for `server`. */
  writeJoinServiceKubeconfig(path: string, server?: string): Promise<void>;
  /** An HTTPS relay in front of the API server (token clients only), for counting and throttling. */
  startRelay(): Promise<ApiRelay>;
  /** kube-system's bootstrap-token Secrets (kubeadm's own included), read through the API. */
  bootstrapTokenSecrets(): Promise<k8s.V1Secret[]>;
  /** Names of kube-system's ConfigMaps, read through the API. */
  configMapNames(): Promise<string[]>;
  stop(): Promise<void>;
}

/**
 * The built programs' directory: the test run's, or outside vitest (the storm bench) the one
 * tools/kubernetes/build.mjs prints (it builds nothing when the build is there).
 */
function programsDir(): string {
  if (process.env['VITEST'] !== undefined) return kubernetesBinDir();
  const build = join(repoRoot(import.meta.dirname), 'tools', 'kubernetes', 'build.mjs');
  return execFileSync(process.execPath, [build], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    timeout: 3_600_000,
  }).trim();
}

/**
 * Starts a control plane of its own in `dir` and sets it up for the JoinService. `cluster` is
 * the configuration published in constellation-cluster; a function gets the API server's address
 * (to publish its real names). `certSans` go into the API server's certificate.
 */
export async function startJoinServiceCluster(
  dir: string,
  options: { cluster: ClusterConfig | ((apiServerIp: string) => ClusterConfig); certSans?: readonly string[] },
): Promise<JoinServiceCluster> {
  const programs = await locateKubernetesPrograms(programsDir());
  const controlPlane = await startIsolatedControlPlane({
    programs,
    dir,
    ...(options.certSans === undefined ? {} : { certSans: options.certSans }),
  });
  try {
    const admin = new Kubectl(programs, controlPlane.superAdminKubeconfig);
    const ip = controlPlane.namespace.ip;
    const config = typeof options.cluster === 'function' ? options.cluster(ip) : options.cluster;
    await admin.run(['create', '-f', '-'], JSON.stringify(clusterConfigMap(config)));
    // The production manifests, as they are: the ServiceAccount first, then its RBAC.
    const DEPLOY = join(repoRoot(import.meta.dirname), 'deploy', 'joinservice');
    await admin.apply(await readFile(join(DEPLOY, 'serviceaccount.yaml'), 'utf8'));
    await admin.apply(await readFile(join(DEPLOY, 'rbac.yaml'), 'utf8'));
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(controlPlane.superAdminKubeconfig);
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const pki = controlPlane.pkiDir;
    return {
      controlPlane,
      programs,
      admin,
      core,
      coordination: kc.makeApiClient(k8s.CoordinationV1Api),
      apiServerUrl: controlPlane.apiServerUrl,
      apiServerEndpoint: `${ip}:${API_SERVER_PORT}`,
      caCertificatePem: controlPlane.caCertificatePem,
      pkiDir: pki,
      writeJoinServiceKubeconfig: (path, server = controlPlane.apiServerUrl) =>
        writeServiceAccountKubeconfig(admin, {
          namespace: 'kube-system',
          name: 'join-service',
          server,
          caPem: controlPlane.caCertificatePem,
          path,
        }),
      startRelay: async () =>
        startApiRelay({
          target: controlPlane.apiServerUrl,
          caPem: controlPlane.caCertificatePem,
          tls: {
            cert: await readFile(join(pki, 'apiserver.crt'), 'utf8'),
            key: await readFile(join(pki, 'apiserver.key'), 'utf8'),
          },
        }),
      bootstrapTokenSecrets: async () =>
        (
          await core.listNamespacedSecret({
            namespace: 'kube-system',
            fieldSelector: 'type=bootstrap.kubernetes.io/token',
          })
        ).items,
      configMapNames: async () =>
        (await core.listNamespacedConfigMap({ namespace: 'kube-system' })).items.map((c) => c.metadata?.name ?? ''),
      stop: () => controlPlane.stop(),
    };
  } catch (error) {
    await controlPlane.stop();
    throw error;
  }
}

/** A bootstrap-token Secret's data field, decoded. */
export function secretField(secret: k8s.V1Secret, key: string): string {
  return Buffer.from(secret.data?.[key] ?? '', 'base64').toString();
}
