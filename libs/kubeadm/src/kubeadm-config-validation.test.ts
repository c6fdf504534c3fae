import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { locateKubernetesPrograms } from '@constellation/kubernetes-programs';
import type { KubernetesPrograms } from '@constellation/kubernetes-programs';
import { createTempDir, kubernetesBinDir, tempDirForTest } from '@constellation/testing';
import type { TempDir } from '@constellation/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { discoveryKubeconfig } from './discovery-kubeconfig.js';
import { parseKubeProxyConfiguration } from './kube-proxy-config.js';
import { initConfiguration, joinConfiguration } from './kubeadm-config.js';
import type { InitConfigInput, JoinConfigInput } from './kubeadm-config.js';
import { KubeadmError, runKubeadm } from './kubeadm-runner.js';

// The configuration the bootstrapper hands kubeadm, checked by the real kubeadm (`kubeadm config
// validate`: strict decoding, defaulting and validation, as init and join do before anything else).

let programs: KubernetesPrograms;
/** A discovery kubeconfig as the bootstrapper writes one (kubeadm checks that the file exists). */
let discoveryFile: string;
let discoveryDir: TempDir;
beforeAll(async () => {
  programs = await locateKubernetesPrograms(kubernetesBinDir());
  discoveryDir = await createTempDir();
  discoveryFile = join(discoveryDir.path, 'discovery.conf');
  await writeFile(
    discoveryFile,
    discoveryKubeconfig({
      apiServerEndpoint: '10.42.0.2:6443',
      caCertificatePem: 'CA',
      clientCertificatePem: 'CERT',
      clientKeyPem: 'KEY',
    }),
    { mode: 0o600 },
  );
});
afterAll(async () => {
  await discoveryDir.remove();
});

const initYaml = (input: Partial<InitConfigInput> = {}): string =>
  initConfiguration({
    nodeName: 'control-plane-0',
    nodeIp: '10.42.0.10',
    bindPort: 6443,
    clusterName: 'constellation',
    kubernetesVersion: programs.release,
    controlPlaneEndpoint: 'api.example.test:6443',
    certSans: ['10.42.0.2', 'api.example.test', 'fd00::2'],
    kubeProxy: false,
    ...input,
  });

const joinYaml = (input: Partial<JoinConfigInput> = {}): string =>
  joinConfiguration({
    nodeName: 'worker-1',
    nodeIp: '10.42.0.11',
    discoveryFile,
    ...input,
  });

/** `kubeadm config validate` on `yaml`: its output, or the KubeadmError it failed with. */
async function validate(yaml: string): Promise<string> {
  const dir = await tempDirForTest();
  const file = join(dir, 'kubeadm.yaml');
  // The init configuration names a bootstrap token: 0600, as the bootstrapper writes it.
  await writeFile(file, yaml, { mode: 0o600 });
  return runKubeadm(['config', 'validate', '--config', file], { program: programs.path('kubeadm'), timeoutMs: 30_000 });
}

async function refusal(yaml: string): Promise<string> {
  const err = await validate(yaml).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(KubeadmError);
  return (err as KubeadmError).output;
}

describe('the kubeadm configuration, validated by the real kubeadm', () => {
  it('accepts the init configuration, with and without kube-proxy and with a service subnet', async () => {
    expect((await validate(initYaml())).trim()).toBe('ok');
    expect((await validate(initYaml({ kubeProxy: true, serviceCidr: '172.30.0.0/16' }))).trim()).toBe('ok');
  });

  it('accepts the join configuration of a worker and of a control-plane node', async () => {
    expect((await validate(joinYaml())).trim()).toBe('ok');
    expect((await validate(joinYaml({ controlPlane: { bindPort: 6443 } }))).trim()).toBe('ok');
  });

  it("accepts a node image's options (patches, ignored preflight checks, no pulls) at init and join", async () => {
    const node = {
      patchesDir: '/etc/constellation/kubeadm-patches',
      ignorePreflightErrors: ['SystemVerification'],
      imagePullPolicy: 'Never' as const,
    };
    const init = initYaml({ node });
    expect(init).toContain('imagePullPolicy: Never');
    expect(init).toContain('directory: /etc/constellation/kubeadm-patches');
    expect((await validate(init)).trim()).toBe('ok');
    expect((await validate(joinYaml({ node, controlPlane: { bindPort: 6443 } }))).trim()).toBe('ok');
    // kubeadm's own check of the values: a policy it does not know is refused.
    expect(await refusal(initYaml({ node: { imagePullPolicy: 'Sometimes' as 'Never' } }))).toContain('Sometimes');
  });

  it("accepts a node image's KubeProxyConfiguration fields with kube-proxy on; kubeadm checks only their decoding", async () => {
    const kubeProxy = parseKubeProxyConfiguration(
      'mode: nftables\nconntrack:\n  maxPerCore: 0\nclusterCIDR: 10.244.0.0/16\n',
    );
    const init = initYaml({ kubeProxy: true, node: { kubeProxy } });
    expect(init).toContain('kind: KubeProxyConfiguration');
    expect((await validate(init)).trim()).toBe('ok');
    // kubeadm refuses what does not decode (a number for a duration), as parseKubeProxyConfiguration does...
    const undecodable = { conntrack: { tcpCloseWaitTimeout: 0 } };
    expect(await refusal(initYaml({ kubeProxy: true, node: { kubeProxy: undecodable } }))).toContain(
      'json: cannot unmarshal number into Go struct field KubeProxyConntrackConfiguration.conntrack.tcpCloseWaitTimeout of type string',
    );
    expect(() => parseKubeProxyConfiguration('conntrack:\n  tcpCloseWaitTimeout: 0\n')).toThrow(
      'field "conntrack.tcpCloseWaitTimeout" must be a duration',
    );
    // ...but takes a mode kube-proxy does not have, which would crash-loop kube-proxy on every node:
    // the bootstrapper's own check refuses it before anything runs.
    expect((await validate(initYaml({ kubeProxy: true, node: { kubeProxy: { mode: 'nft' } } }))).trim()).toBe('ok');
    expect(() => parseKubeProxyConfiguration('mode: nft\n')).toThrow('field "mode" must be one of');
  });

  it('refuses a field kubeadm does not know, naming it (strict decoding)', async () => {
    const broken = initYaml().replace('clusterName: constellation', 'clusterName: constellation\nsurprise: yes');
    expect(await refusal(broken)).toContain(
      'error: error unmarshaling configuration schema.GroupVersionKind{Group:"kubeadm.k8s.io", Version:"v1beta4", Kind:"ClusterConfiguration"}: strict decoding error: unknown field "surprise"',
    );
  });

  it('refuses a discovery file that is not there, and a port that is none', async () => {
    expect(await refusal(joinYaml({ discoveryFile: '/nonexistent/discovery.conf' }))).toContain(
      'error: discovery.file.kubeConfigPath: Invalid value: "/nonexistent/discovery.conf": not a valid HTTPS URL or a file on disk',
    );
    expect(await refusal(initYaml({ bindPort: 70_000 }))).toContain(
      'error: localAPIEndpoint.bindPort: Invalid value: 70000: port number is not valid',
    );
  });

  it('deploys only its own minor and the one before: a node installs the kubeadm of its cluster', async () => {
    // kubeadm's MinimumControlPlaneVersion: one minor below its own.
    const [major, minor] = programs.release.slice(1).split('.').map(Number) as [number, number];
    const previous = `v${String(major)}.${String(minor - 1)}.0`;
    const older = `v${String(major)}.${String(minor - 2)}.3`;
    expect((await validate(initYaml({ kubernetesVersion: previous }))).trim()).toBe('ok');
    expect(await refusal(initYaml({ kubernetesVersion: older }))).toContain(
      `error: this version of kubeadm only supports deploying clusters with the control plane version >= ${String(major)}.${String(minor - 1)}.0. Current version: ${older}`,
    );
  });
});
