import { createHash, X509Certificate } from 'node:crypto';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { parse } from 'yaml';
import { spawnApiServer, stopApiServer } from './api-server-process.js';
import { ConfigError, parseKubeadmConfig } from './config-schema.js';
import { httpsJson } from './https-json.js';
import { kubeconfig } from './kubeconfig.js';
import { standinPaths } from './paths.js';
import { ensureClusterPki, missingSharedPki } from './pki.js';
import { errorMessage } from '@constellation/errors';

/** A kubeadm-style failure: printed as "error execution phase <phase>: <message>", exit code 1. */
export class PhaseError extends Error {
  readonly phase: string;
  constructor(phase: string, message: string) {
    super(`error execution phase ${phase}: ${message}`);
    this.phase = phase;
  }
}

type Print = (line: string) => void;

async function waitReady(url: string, ca: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    try {
      const res = await httpsJson(`${url}/readyz`, { ca, timeoutMs: 1_000 });
      if (res.status === 200) return;
      last = `status ${res.status}`;
    } catch (err) {
      last = errorMessage(err);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new PhaseError(
    'wait-control-plane',
    `the API server at ${url} did not become ready within ${timeoutMs} ms (${last})`,
  );
}

async function apiCreate(url: string, ca: string, path: string, body: unknown): Promise<void> {
  const res = await httpsJson(`${url}${path}`, { method: 'POST', body, ca });
  if (res.status !== 201 && res.status !== 409)
    throw new Error(`POST ${path}: status ${res.status}: ${JSON.stringify(res.body)}`);
}

function readConfig(text: string): ReturnType<typeof parseKubeadmConfig> {
  try {
    return parseKubeadmConfig(text);
  } catch (err) {
    if (err instanceof ConfigError) throw new PhaseError('preflight', err.message);
    throw err;
  }
}

/** `kubeadm init --config <file>`: PKI, the API server (as a detached process), kubeconfigs, the node. */
export async function init(root: string, configPath: string, print: Print): Promise<void> {
  const docs = readConfig(await readFile(configPath, 'utf8'));
  if (docs.init === undefined || docs.cluster === undefined) {
    throw new PhaseError('preflight', 'init needs an InitConfiguration and a ClusterConfiguration');
  }
  const { init: initConfig, cluster } = docs;
  const paths = standinPaths(root);
  const [endpointHost = ''] = cluster.controlPlaneEndpoint.split(':');
  const ips = [
    ...new Set([
      initConfig.localAPIEndpoint.advertiseAddress,
      '127.0.0.1',
      ...(cluster.apiServer?.certSANs ?? []).filter(isIp),
      ...(isIp(endpointHost) ? [endpointHost] : []),
    ]),
  ];
  const names = [
    ...(cluster.apiServer?.certSANs ?? []).filter((s) => !isIp(s)),
    ...(isIp(endpointHost) ? [] : [endpointHost]),
  ];
  print('[certs] Using certificateDir folder "/etc/kubernetes/pki"');
  const pki = await ensureClusterPki(paths.pki, ips, names);
  await mkdir(paths.manifests, { recursive: true });
  const server = `https://${cluster.controlPlaneEndpoint}`;
  await writeFile(
    paths.adminConf,
    kubeconfig({
      clusterName: cluster.clusterName,
      server,
      caPem: pki.caCertPem,
      userName: 'kubernetes-admin',
      clientCertPem: pki.adminCertPem,
      clientKeyPem: pki.adminKeyPem,
    }),
    { mode: 0o600 },
  );
  print('[kubeconfig] Writing "admin.conf" kubeconfig file');
  await stopApiServer(root);
  await spawnApiServer(
    root,
    initConfig.localAPIEndpoint.advertiseAddress,
    initConfig.localAPIEndpoint.bindPort,
    cluster.kubernetesVersion,
  );
  print('[wait-control-plane] Waiting for the kubelet to boot up the control plane');
  const local = `https://${initConfig.localAPIEndpoint.advertiseAddress}:${initConfig.localAPIEndpoint.bindPort}`;
  await waitReady(local, pki.caCertPem, 20_000);
  const clusterInfo = kubeconfig({ clusterName: '', server, caPem: pki.caCertPem, userName: '' });
  await apiCreate(local, pki.caCertPem, '/api/v1/namespaces/kube-public/configmaps', {
    metadata: { name: 'cluster-info' },
    data: { kubeconfig: clusterInfo },
  });
  await registerNode(local, pki.caCertPem, initConfig.nodeRegistration.name, true);
  await writeFile(
    paths.kubeletConf,
    kubeconfig({
      clusterName: cluster.clusterName,
      server,
      caPem: pki.caCertPem,
      userName: `system:node:${initConfig.nodeRegistration.name}`,
    }),
    { mode: 0o600 },
  );
  print('Your Kubernetes control-plane has initialized successfully!');
}

/** `kubeadm join --config <file>`: discovery with the CA pin, token check, node registration. */
export async function join(root: string, configPath: string, print: Print): Promise<void> {
  const docs = readConfig(await readFile(configPath, 'utf8'));
  if (docs.join === undefined) throw new PhaseError('preflight', 'join needs a JoinConfiguration');
  const { discovery, nodeRegistration, controlPlane } = docs.join;
  const { apiServerEndpoint, token, caCertHashes } = discovery.bootstrapToken;
  const server = `https://${apiServerEndpoint}`;
  print(`[discovery] Trying to connect to API Server "${apiServerEndpoint}"`);
  let info;
  try {
    info = await httpsJson(`${server}/api/v1/namespaces/kube-public/configmaps/cluster-info`, { timeoutMs: 10_000 });
  } catch (err) {
    throw new PhaseError('preflight', `couldn't validate the identity of the API Server: ${errorMessage(err)}`);
  }
  const data = (info.body as { data?: { kubeconfig?: string } }).data?.kubeconfig;
  if (info.status !== 200 || data === undefined)
    throw new PhaseError(
      'preflight',
      `couldn't validate the identity of the API Server: cluster-info ConfigMap unavailable (status ${info.status})`,
    );
  const caData =
    (parse(data) as { clusters?: { cluster?: { 'certificate-authority-data'?: string } }[] }).clusters?.[0]?.cluster?.[
      'certificate-authority-data'
    ] ?? '';
  const caPem = Buffer.from(caData, 'base64').toString();
  const pin = `sha256:${createHash('sha256')
    .update(new X509Certificate(caPem).publicKey.export({ type: 'spki', format: 'der' }))
    .digest('hex')}`;
  if (!caCertHashes.includes(pin)) {
    throw new PhaseError(
      'preflight',
      `couldn't validate the identity of the API Server: cluster CA found in cluster-info ConfigMap is invalid: none of the public keys "${pin}" are pinned`,
    );
  }
  print(
    '[discovery] Cluster info signature and contents are valid and no TLS pinning was specified, will use API Server',
  );
  const [id = '', secret = ''] = token.split('.');
  const tokenSecret = await httpsJson(`${server}/api/v1/namespaces/kube-system/secrets/bootstrap-token-${id}`, {
    ca: caPem,
  });
  const fields = (tokenSecret.body as { data?: Record<string, string> }).data ?? {};
  const decoded = (key: string): string => Buffer.from(fields[key] ?? '', 'base64').toString();
  if (tokenSecret.status !== 200 || decoded('token-secret') !== secret) {
    throw new PhaseError('kubelet-start', `the bootstrap token "${id}" is not valid for this cluster`);
  }
  if (new Date(decoded('expiration')).getTime() < Date.now())
    throw new PhaseError('kubelet-start', `the bootstrap token "${id}" has expired`);
  const paths = standinPaths(root);
  if (controlPlane !== undefined) {
    const missing = await missingSharedPki(paths.pki);
    if (missing.length > 0)
      throw new PhaseError('control-plane-prepare', `missing shared certificates and keys: ${missing.join(', ')}`);
  }
  await registerNode(server, caPem, nodeRegistration.name, controlPlane !== undefined);
  await mkdir(paths.kubernetes, { recursive: true });
  await writeFile(
    paths.kubeletConf,
    kubeconfig({ clusterName: 'kubernetes', server, caPem, userName: `system:node:${nodeRegistration.name}` }),
    { mode: 0o600 },
  );
  print('This node has joined the cluster');
}

/** `kubeadm reset`: stops the API server stand-in and removes what init and join wrote. */
export async function reset(root: string, print: Print): Promise<void> {
  const paths = standinPaths(root);
  await stopApiServer(root);
  for (const path of [paths.pki, paths.manifests, paths.adminConf, paths.kubeletConf])
    await rm(path, { recursive: true, force: true });
  print('[reset] Deleted contents of /etc/kubernetes');
}

async function registerNode(url: string, ca: string, name: string, controlPlane: boolean): Promise<void> {
  const labels: Record<string, string> = { 'kubernetes.io/hostname': name };
  if (controlPlane) labels['node-role.kubernetes.io/control-plane'] = '';
  await apiCreate(url, ca, '/api/v1/nodes', { metadata: { name, labels } });
}

function isIp(value: string): boolean {
  return /^\d{1,3}(\.\d{1,3}){3}$/.test(value) || value.includes(':');
}
