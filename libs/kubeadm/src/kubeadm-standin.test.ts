import { X509Certificate, generateKeyPairSync } from 'node:crypto';
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { CertificateAuthority, caPublicKeyPin } from '@constellation/keys';
import { standinPaths, stopApiServer } from '@constellation/sandbox';
import { freePort, installTypeScriptCommand, tempDirForTest } from '@constellation/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { createBootstrapToken } from './bootstrap-token.js';
import { INIT_TOKEN_GROUP, deleteUnmintedBootstrapTokens } from './init-bootstrap-token.js';
import { initConfiguration, joinConfiguration } from './kubeadm-config.js';
import { KubeadmError, runKubeadm } from './kubeadm-runner.js';
import { KUBELET_SERVING_CERT_FILE } from './kubelet-paths.js';
import { KUBEADM_STANDIN_ENTRY } from '@constellation/sandbox/testing';
import { DEFAULT_KUBERNETES_VERSION } from './kubernetes-version.js';

// The configuration libs/kubeadm generates, run through the kubeadm stand-in, which follows
// kubeadm's decoding, defaulting and token discovery (cmd/kubeadm/app/discovery/token/token.go)
// and runs kube-controller-manager's bootstrap signer and kubelet CSR approver/signer.

const roots: string[] = [];
afterEach(async () => {
  await Promise.all(roots.splice(0).map((root) => stopApiServer(root)));
});

interface StandinNode {
  root: string;
  kubeadm: string;
  env: NodeJS.ProcessEnv;
}

async function node(): Promise<StandinNode> {
  const root = await tempDirForTest();
  roots.push(root);
  const kubeadm = await installTypeScriptCommand(join(root, 'bin'), 'kubeadm', KUBEADM_STANDIN_ENTRY);
  return { root, kubeadm, env: { ...process.env, KUBEADM_STANDIN_ROOT: root } };
}

async function kubeadm(on: StandinNode, args: string[]): Promise<string> {
  return runKubeadm(args, { program: on.kubeadm, timeoutMs: 60_000, env: on.env });
}

async function failure(on: StandinNode, args: string[]): Promise<string> {
  const err = await kubeadm(on, args).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(KubeadmError);
  return (err as KubeadmError).output;
}

const tokenSecrets = async (core: k8s.CoreV1Api): Promise<k8s.V1Secret[]> =>
  (await core.listNamespacedSecret({ namespace: 'kube-system' })).items.filter(
    (s) => s.type === 'bootstrap.kubernetes.io/token',
  );

interface InitialisedControlPlane {
  cp: StandinNode;
  port: number;
  admin: k8s.KubeConfig;
  core: k8s.CoreV1Api;
  caPem: string;
  initYaml: string;
}

async function initControlPlane(): Promise<InitialisedControlPlane> {
  const cp = await node();
  const port = await freePort();
  const initYaml = initConfiguration({
    nodeName: 'control-plane-0',
    nodeIp: '127.0.0.1',
    bindPort: port,
    clusterName: 'mini',
    kubernetesVersion: DEFAULT_KUBERNETES_VERSION,
    controlPlaneEndpoint: `127.0.0.1:${port}`,
    certSans: [],
    kubeProxy: false,
  });
  const configFile = join(cp.root, 'kubeadm-init.yaml');
  await writeFile(configFile, initYaml, { mode: 0o600 });
  const output = await kubeadm(cp, ['init', '--config', configFile, '--skip-token-print']);
  expect(output).toContain('Your Kubernetes control-plane has initialized successfully!');
  const paths = standinPaths(cp.root);
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(paths.adminConf);
  const caPem = await readFile(join(paths.pki, 'ca.crt'), 'utf8');
  return { cp, port, admin: kc, core: kc.makeApiClient(k8s.CoreV1Api), caPem, initYaml };
}

/** The JoinConfiguration for `token`, with kubeadm's discovery timeout shortened for tests. */
function joinYaml(port: number, token: string, hashes: string[], discoveryTimeout = '3s'): string {
  const docs = parseAllDocuments(
    joinConfiguration({
      nodeName: 'worker-1',
      nodeIp: '127.0.0.2',
      apiServerEndpoint: `127.0.0.1:${port}`,
      token,
      caCertHashes: hashes,
    }),
  ).map((d) => d.toJS() as Record<string, unknown>);
  const [first, ...rest] = docs;
  return [{ ...first, timeouts: { discovery: discoveryTimeout } }, ...rest].map((d) => stringify(d)).join('---\n');
}

describe('kubeadm init and join through the stand-in', () => {
  it('joins a worker through token discovery and TLS bootstrap; the kubelet registers a Ready Node with its own certificate', async () => {
    const { admin, core, port, caPem } = await initControlPlane();
    const token = await createBootstrapToken(core, 15 * 60_000, 'test join');
    const worker = await node();
    const joinFile = join(worker.root, 'kubeadm-join.yaml');
    await writeFile(joinFile, joinYaml(port, token.token, [caPublicKeyPin(caPem)]));
    const output = await kubeadm(worker, ['join', '--config', joinFile]);
    expect(output).toContain('TLS certificate validates against pinned roots');
    expect(output).toContain('This node has joined the cluster');

    const nodes = (await core.listNode()).items;
    const workerNode = nodes.find((n) => n.metadata?.name === 'worker-1');
    expect(workerNode?.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    expect(workerNode?.status?.addresses).toContainEqual({ type: 'InternalIP', address: '127.0.0.2' });
    expect(workerNode?.metadata?.labels?.['node-role.kubernetes.io/control-plane']).toBeUndefined();
    const cpNode = nodes.find((n) => n.metadata?.name === 'control-plane-0');
    expect(cpNode?.metadata?.labels).toHaveProperty(['node-role.kubernetes.io/control-plane'], '');
    expect(cpNode?.metadata?.labels).toHaveProperty(['node.kubernetes.io/exclude-from-external-load-balancers'], '');
    // No nodeRegistration.taints in our InitConfiguration: kubeadm's default control-plane taint
    // (SetNodeRegistrationDynamicDefaults); a worker join sets none.
    expect(cpNode?.spec?.taints).toEqual([{ key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' }]);
    expect(workerNode?.spec?.taints ?? []).toEqual([]);
    // The worker's kubelet configuration is the cluster's kubelet-config, which init stored from
    // our init file's KubeletConfiguration: the join file carries none (kubeadm would skip it).
    const kubeletConfig = parse(await readFile(standinPaths(worker.root).kubeletConfig, 'utf8')) as Record<
      string,
      unknown
    >;
    expect(kubeletConfig['tlsCertFile']).toBe(KUBELET_SERVING_CERT_FILE);

    // The kubelet's credential came from its CSR (signer kube-apiserver-client-kubelet), which
    // kube-controller-manager's approver approved for the bootstrap token's user.
    const kubeletConf = parse(await readFile(standinPaths(worker.root).kubeletConf, 'utf8')) as {
      users: { user: { 'client-certificate-data': string } }[];
    };
    const cert = new X509Certificate(
      Buffer.from(kubeletConf.users[0]?.user['client-certificate-data'] ?? '', 'base64'),
    );
    expect(cert.subject).toContain('CN=system:node:worker-1');
    expect(cert.subject).toContain('O=system:nodes');
    expect(cert.checkIssued(new X509Certificate(caPem))).toBe(true);
    const csrs = (await admin.makeApiClient(k8s.CertificatesV1Api).listCertificateSigningRequest()).items;
    expect(csrs).toHaveLength(1);
    expect(csrs[0]?.spec.signerName).toBe('kubernetes.io/kube-apiserver-client-kubelet');
    expect(csrs[0]?.spec.username).toBe(`system:bootstrap:${token.id}`);
    expect(csrs[0]?.status?.conditions?.map((c) => [c.type, c.reason])).toEqual([['Approved', 'AutoApproved']]);
  });

  it("uses a valid client certificate already in the kubelet's store instead of a TLS bootstrap", async () => {
    const { admin, core, port, caPem, cp } = await initControlPlane();
    const pki = join(standinPaths(cp.root).pki);
    const ca = await CertificateAuthority.fromPem(caPem, await readFile(join(pki, 'ca.key'), 'utf8'));
    const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const certPem = await ca.issueCertificate({
      commonName: 'system:node:worker-1',
      organisations: ['system:nodes'],
      publicKey,
      usage: 'client',
    });
    const worker = await node();
    const certDir = join(worker.root, 'var', 'lib', 'kubelet', 'pki');
    await mkdir(certDir, { recursive: true });
    await writeFile(
      join(certDir, 'kubelet-client-2030-01-01-00-00-00.pem'),
      `${certPem}${privateKey.export({ type: 'sec1', format: 'pem' }).toString()}`,
      { mode: 0o600 },
    );
    await symlink('kubelet-client-2030-01-01-00-00-00.pem', join(certDir, 'kubelet-client-current.pem'));
    const token = await createBootstrapToken(core, 15 * 60_000, 'test join');
    const joinFile = join(worker.root, 'kubeadm-join.yaml');
    await writeFile(joinFile, joinYaml(port, token.token, [caPublicKeyPin(caPem)]));
    expect(await kubeadm(worker, ['join', '--config', joinFile])).toContain('This node has joined the cluster');
    expect((await admin.makeApiClient(k8s.CertificatesV1Api).listCertificateSigningRequest()).items).toEqual([]);
    const registered = await core.readNode({ name: 'worker-1' });
    expect(registered.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
  });

  it('refuses a join whose token signed nothing: cluster-info never gets its JWS (init-only token)', async () => {
    const { port, caPem, initYaml } = await initControlPlane();
    const initDoc = parseAllDocuments(initYaml)[0]?.toJS() as {
      bootstrapTokens: { token: string; groups: string[] }[];
    };
    const initToken = initDoc.bootstrapTokens[0]?.token ?? '';
    expect(initDoc.bootstrapTokens[0]?.groups).toEqual([INIT_TOKEN_GROUP]);
    const worker = await node();
    const joinFile = join(worker.root, 'kubeadm-join.yaml');
    await writeFile(joinFile, joinYaml(port, initToken, [caPublicKeyPin(caPem)], '1s'));
    const output = await failure(worker, ['join', '--config', joinFile]);
    // token.go getClusterInfo: the poll ends with its last error.
    expect(output).toContain(
      `error execution phase preflight: couldn't validate the identity of the API Server: could not find a JWS signature in the cluster-info ConfigMap for token ID "${initToken.split('.')[0] ?? ''}"`,
    );
  });

  it("refuses cluster-info signed with another token's secret, and a CA that is not pinned", async () => {
    const { core, port, caPem } = await initControlPlane();
    const token = await createBootstrapToken(core, 15 * 60_000, 'test join');
    const worker = await node();
    const joinFile = join(worker.root, 'kubeadm-join.yaml');
    // token.go validateClusterInfoToken: jws.DetachedTokenIsValid with the joiner's secret.
    await writeFile(joinFile, joinYaml(port, `${token.id}.${'x'.repeat(16)}`, [caPublicKeyPin(caPem)]));
    expect(await failure(worker, ['join', '--config', joinFile])).toContain(
      "failed to verify JWS signature of received cluster info object, can't trust this API Server",
    );
    // token.go validateClusterCA: pubkeypin.Set.CheckAny.
    await writeFile(joinFile, joinYaml(port, token.token, [`sha256:${'00'.repeat(32)}`]));
    expect(await failure(worker, ['join', '--config', joinFile])).toContain(
      `cluster CA found in cluster-info ConfigMap is invalid: none of the public keys "${caPublicKeyPin(caPem)}" are pinned`,
    );
    // pubkeypin.Set.Allow lower-cases the hex: an upper-case pin is the same pin.
    const upper = `sha256:${caPublicKeyPin(caPem).slice('sha256:'.length).toUpperCase()}`;
    await writeFile(joinFile, joinYaml(port, token.token, [upper]));
    expect(await kubeadm(worker, ['join', '--config', joinFile])).toContain('This node has joined the cluster');
  });

  it('leaves no bootstrap token after init that the JoinService did not mint', async () => {
    const { core } = await initControlPlane();
    // What kubeadm init created: the init-only token, neither signing nor in the node group.
    const created = await tokenSecrets(core);
    expect(created).toHaveLength(1);
    const data = (key: string): string => Buffer.from(created[0]?.data?.[key] ?? '', 'base64').toString();
    expect(data('usage-bootstrap-signing')).toBe('');
    expect(data('auth-extra-groups')).toBe(INIT_TOKEN_GROUP);
    expect(new Date(data('expiration')).getTime() - Date.now()).toBeLessThanOrEqual(10 * 60_000);

    const deleted = await deleteUnmintedBootstrapTokens(core);
    expect(deleted).toEqual([data('token-id')]);
    expect(await tokenSecrets(core)).toEqual([]);
    const minted = await createBootstrapToken(core, 15 * 60_000, 'attested join');
    expect(await deleteUnmintedBootstrapTokens(core)).toEqual([]);
    expect((await tokenSecrets(core)).map((s) => s.metadata?.name)).toEqual([`bootstrap-token-${minted.id}`]);
  });

  it("warns about unknown fields like kubeadm's VerifyUnmarshalStrict, and goes on", async () => {
    const cp = await node();
    const port = await freePort();
    const configFile = join(cp.root, 'unknown-field.yaml');
    const valid = initConfiguration({
      nodeName: 'n',
      nodeIp: '127.0.0.1',
      bindPort: port,
      clusterName: 'c',
      kubernetesVersion: DEFAULT_KUBERNETES_VERSION,
      controlPlaneEndpoint: `127.0.0.1:${port}`,
      certSans: [],
      kubeProxy: true,
    });
    await writeFile(configFile, valid.replace('clusterName: c', 'clusterName: c\nsurprise: yes'));
    const output = await kubeadm(cp, ['init', '--config', configFile]);
    expect(output).toMatch(
      /initconfiguration\.go:306\] error unmarshaling configuration schema\.GroupVersionKind\{Group:"kubeadm\.k8s\.io", Version:"v1beta4", Kind:"ClusterConfiguration"\}: strict decoding error: unknown field "surprise"/,
    );
    expect(output).toContain('Your Kubernetes control-plane has initialized successfully!');
  });
});
