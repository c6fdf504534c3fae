import { generateKeyPairSync } from 'node:crypto';
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join as joinPath } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { CertificateAuthority, SHARED_CONTROL_PLANE_PKI_FILES, caPublicKeyPin } from '@constellation/keys';
import { afterEach, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { join } from './commands.js';
import { standinPaths } from './paths.js';
import { KUBEADM_API as API, initYaml, standinCluster } from './standin.fixture.js';
import type { StandinCluster, StandinNode } from './standin.fixture.js';

// What kubeadm checks before it changes a node, and the join's check for a Node of the same name:
// - init: InitNodeChecks (cmd/kubeadm/app/preflight/checks.go): PortOpenCheck on the bind port,
//   FileAvailableCheck on each static Pod manifest (a second init without `kubeadm reset` fails);
// - join: JoinNodeChecks: FileAvailableCheck on kubelet.conf, bootstrap-kubelet.conf and, for a
//   worker, the CA certificate the kubelet-start phase writes (a join that got that far cannot
//   simply be run again);
// - join kubelet-start (cmd/kubeadm/app/cmd/phases/join/kubelet.go runKubeletStartJoinPhase): the
//   CA written to caCertPath, then, with the TLS bootstrap token, a Node of the same name whose
//   Ready condition is True refuses the join.
// The stand-in's init runs real kubeadm and the real control plane (in a network namespace of the
// test's own); its join runs here on the host against that API server.

const TOKEN = 'abcdef.0123456789abcdef';
const clusters: StandinCluster[] = [];
afterEach(async () => {
  for (const cluster of clusters.splice(0)) await cluster.cleanup();
});

async function newCluster(): Promise<StandinCluster> {
  const cluster = await standinCluster();
  clusters.push(cluster);
  return cluster;
}

/** The API server's host:port (the namespace's address, kubeadm's port). */
const endpoint = (cluster: StandinCluster): string => `${cluster.network.ip}:6443`;

/** Runs the stand-in's `init` on `node` (default: a new node of `cluster`); resolves with its root, exit code and stderr. */
async function init(
  cluster: StandinCluster,
  clusterConfig: Record<string, unknown> = {},
  on?: StandinNode,
): Promise<{ node: StandinNode; root: string; code: number; stderr: string }> {
  const node = on ?? (await cluster.node());
  const config = joinPath(node.root, 'init.yaml');
  await writeFile(config, initYaml(cluster, { bootstrapTokens: [{ token: TOKEN }] }, clusterConfig));
  const result = await node.run(['init', '--config', config]);
  return { node, root: node.root, code: result.code, stderr: result.stderr };
}

/** A node root of `cluster` that runs only the stand-in's join (in this process). */
const newRoot = async (cluster: StandinCluster): Promise<string> => (await cluster.node()).root;

/** The stand-in's `join` in this process; resolves with the error message, if any. */
async function joinAs(
  root: string,
  name: string,
  cluster: StandinCluster,
  pin: string,
  ignore: string[] = [],
  extra: Record<string, unknown> = {},
): Promise<string> {
  const config = joinPath(root, `join-${name}.yaml`);
  await writeFile(
    config,
    stringify({
      apiVersion: API,
      kind: 'JoinConfiguration',
      nodeRegistration: { name, ...(ignore.length > 0 ? { ignorePreflightErrors: ignore } : {}) },
      discovery: { bootstrapToken: { apiServerEndpoint: endpoint(cluster), token: TOKEN, caCertHashes: [pin] } },
      timeouts: { discovery: '60s', tlsBootstrap: '60s' },
      ...extra,
    }),
  );
  try {
    await join(root, config, () => undefined);
    return '';
  } catch (err) {
    return (err as Error).message;
  }
}

describe("kubeadm's preflight checks and the join's existing-Node check", () => {
  it('InitNodeChecks: a second init without reset fails on the bind port and the static Pod manifests', async () => {
    const cluster = await newCluster();
    const first = await init(cluster);
    expect(first.code, first.stderr).toBe(0);
    const again = await init(cluster, {}, first.node);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('[ERROR Port-6443]: Port 6443 is in use');
    expect(again.stderr).toContain(
      '[ERROR FileAvailable--etc-kubernetes-manifests-kube-apiserver.yaml]: /etc/kubernetes/manifests/kube-apiserver.yaml already exists',
    );
    expect(again.stderr).toContain('error execution phase preflight');
  }, 120_000);

  it('runKubeletStartJoinPhase and JoinNodeChecks: a Ready Node of the same name refuses the join, which cannot then be rerun', async () => {
    const cluster = await newCluster();
    const initialised = await init(cluster);
    expect(initialised.code, initialised.stderr).toBe(0);
    const caPem = await readFile(joinPath(standinPaths(initialised.root).pki, 'ca.crt'), 'utf8');
    const pin = caPublicKeyPin(caPem);

    // cp-0 is init's own Node, registered Ready.
    const clash = await newRoot(cluster);
    expect(await joinAs(clash, 'cp-0', cluster, pin)).toBe(
      'error execution phase kubelet-start: a Node with name "cp-0" and status "Ready" already exists in the cluster. You must delete the existing Node or change the name of this new joining Node',
    );
    // kubelet-start wrote the CA before it looked: a second attempt fails preflight on it.
    expect(await readFile(joinPath(standinPaths(clash).pki, 'ca.crt'), 'utf8')).toBe(caPem);
    const rerun = await joinAs(clash, 'worker-0', cluster, pin);
    expect(rerun).toMatch(/^error execution phase preflight: /);
    expect(rerun).toContain(
      '[ERROR FileAvailable--etc-kubernetes-pki-ca.crt]: /etc/kubernetes/pki/ca.crt already exists',
    );

    // A worker joins once; running the same join again fails preflight (kubelet.conf, CA).
    const worker = await newRoot(cluster);
    expect(await joinAs(worker, 'worker-1', cluster, pin)).toBe('');
    const second = await joinAs(worker, 'worker-1', cluster, pin);
    expect(second).toContain(
      '[ERROR FileAvailable--etc-kubernetes-kubelet.conf]: /etc/kubernetes/kubelet.conf already exists',
    );
    expect(second).toContain('[ERROR FileAvailable--etc-kubernetes-pki-ca.crt]');
    // RunChecks: an ignored check is only a warning; the Ready Node then still refuses the join.
    expect(
      await joinAs(worker, 'worker-1', cluster, pin, [
        'FileAvailable--etc-kubernetes-kubelet.conf',
        'FileAvailable--etc-kubernetes-pki-ca.crt',
      ]),
    ).toMatch(/^error execution phase kubelet-start: a Node with name "worker-1" and status "Ready" already exists/);
  }, 120_000);

  // Join's preflight phase reads the cluster's ClusterConfiguration, which init's upload-config
  // phase stored in kube-system/kubeadm-config (cmd/kubeadm/app/phases/uploadconfig/uploadconfig.go
  // UploadConfiguration, readable by the node token group), and a control plane may only join a
  // cluster with a controlPlaneEndpoint (cmd/kubeadm/app/cmd/phases/join/preflight.go
  // checkIfReadyForAdditionalControlPlane). init's kubeconfigs fall back to the advertise
  // address (GetControlPlaneEndpoint), but the stored configuration keeps the endpoint unset.
  it('checkIfReadyForAdditionalControlPlane: no control plane joins a cluster initialised without controlPlaneEndpoint', async () => {
    const cluster = await newCluster();
    const initialised = await init(cluster);
    expect(initialised.code, initialised.stderr).toBe(0);
    const pki = standinPaths(initialised.root).pki;
    const pin = caPublicKeyPin(await readFile(joinPath(pki, 'ca.crt'), 'utf8'));
    const admin = new k8s.KubeConfig();
    admin.loadFromFile(standinPaths(initialised.root).adminConf);
    expect(admin.getCurrentCluster()?.server).toBe(`https://${endpoint(cluster)}`);
    const stored = await admin
      .makeApiClient(k8s.CoreV1Api)
      .readNamespacedConfigMap({ namespace: 'kube-system', name: 'kubeadm-config' });
    const clusterConfiguration = parse(stored.data?.['ClusterConfiguration'] ?? '') as Record<string, unknown>;
    expect(clusterConfiguration).toMatchObject({
      apiVersion: API,
      kind: 'ClusterConfiguration',
      kubernetesVersion: cluster.release,
    });
    expect(clusterConfiguration['controlPlaneEndpoint']).toBeUndefined();

    const second = await newRoot(cluster);
    for (const file of SHARED_CONTROL_PLANE_PKI_FILES) {
      await mkdir(dirname(joinPath(standinPaths(second).pki, file)), { recursive: true });
      await copyFile(joinPath(pki, file), joinPath(standinPaths(second).pki, file));
    }
    const controlPlane = {
      controlPlane: { localAPIEndpoint: { advertiseAddress: '10.0.0.2', bindPort: 6443 } },
    };
    const refused = await joinAs(second, 'cp-1', cluster, pin, [], controlPlane);
    expect(refused).toMatch(/^error execution phase preflight: /);
    expect(refused).toContain(
      "unable to add a new control plane instance to a cluster that doesn't have a stable controlPlaneEndpoint address",
    );
  }, 120_000);

  // checkIfReadyForAdditionalControlPlane -> certs.SharedCertificateExists
  // (cmd/kubeadm/app/phases/certs/certs.go validateCACertAndKey, validatePrivatePublicKey): the
  // shared CAs must load and be CAs, their keys and the service-account key pair must load.
  it('SharedCertificateExists: a control plane brings loadable CA certificates and keys', async () => {
    const cluster = await newCluster();
    const clusterConfig = { clusterName: 'constellation', controlPlaneEndpoint: endpoint(cluster) };
    const initialised = await init(cluster, clusterConfig);
    expect(initialised.code, initialised.stderr).toBe(0);
    const pki = standinPaths(initialised.root).pki;
    const pin = caPublicKeyPin(await readFile(joinPath(pki, 'ca.crt'), 'utf8'));
    const second = await newRoot(cluster);
    const secondPki = standinPaths(second).pki;
    for (const file of SHARED_CONTROL_PLANE_PKI_FILES) {
      await mkdir(dirname(joinPath(secondPki, file)), { recursive: true });
      await copyFile(joinPath(pki, file), joinPath(secondPki, file));
    }
    // The API server's serving certificate (not a CA) in place of the front-proxy CA, and a
    // service-account key that is no key.
    await copyFile(joinPath(pki, 'apiserver.crt'), joinPath(secondPki, 'front-proxy-ca.crt'));
    await writeFile(joinPath(secondPki, 'sa.key'), 'not a key\n');
    const controlPlane = {
      controlPlane: { localAPIEndpoint: { advertiseAddress: '10.0.0.2', bindPort: 6443 } },
    };
    const refused = await joinAs(second, 'cp-1', cluster, pin, [], controlPlane);
    expect(refused).toMatch(/^error execution phase preflight: /);
    expect(refused).toContain('certificate front-proxy CA is not a CA');
    expect(refused).toContain('failure loading key for service account');

    // With the right files it joins; its admin.conf names the cluster as the stored
    // ClusterConfiguration does (kubeconfig phase: CreateJoinControlPlaneKubeConfigFiles).
    for (const file of ['front-proxy-ca.crt', 'sa.key']) await copyFile(joinPath(pki, file), joinPath(secondPki, file));
    expect(await joinAs(second, 'cp-1', cluster, pin, [], controlPlane)).toBe('');
    const admin = new k8s.KubeConfig();
    admin.loadFromFile(standinPaths(second).adminConf);
    expect(admin.getCurrentContext()).toBe('kubernetes-admin@constellation');
    expect(admin.getCurrentCluster()).toMatchObject({ name: 'constellation', server: `https://${endpoint(cluster)}` });
  }, 120_000);

  // init with a CA already in place (the bootstrapper writes ca.crt and ca.key first): the
  // certs phase uses it only if it is a CA (cmd/kubeadm/app/phases/certs/certs.go
  // LoadCertificateAuthority: "... certificate is not a certificate authority").
  it('LoadCertificateAuthority: init refuses an existing ca.crt that is not a CA', async () => {
    const cluster = await newCluster();
    const node = await cluster.node();
    const root = node.root;
    const { ca } = await CertificateAuthority.generate('kubernetes');
    const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const leaf = await ca.issueCertificate({ commonName: 'kubernetes', publicKey, usage: 'client' });
    const pki = standinPaths(root).pki;
    await mkdir(pki, { recursive: true });
    await writeFile(joinPath(pki, 'ca.crt'), leaf);
    await writeFile(joinPath(pki, 'ca.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }));
    const refused = await init(cluster, {}, node);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('ca certificate is not a certificate authority');
  }, 120_000);
});
