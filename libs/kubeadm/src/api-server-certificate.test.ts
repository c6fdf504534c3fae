import { X509Certificate } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { locateKubernetesPrograms } from '@constellation/kubernetes-programs';
import type { KubernetesPrograms } from '@constellation/kubernetes-programs';
import { kubernetesBinDir, tempDirForTest } from '@constellation/testing';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { apiServerAltNames } from './api-server-alt-names.js';
import { canonicalAddress } from './canonical-address.js';
import { initConfiguration } from './kubeadm-config.js';
import type { InitConfigInput } from './kubeadm-config.js';
import { runKubeadm } from './kubeadm-runner.js';

// apiServerAltNames says which names the API server's certificate carries (no worker's kubelet
// serving certificate may carry one). Here the real kubeadm makes that certificate from the init
// configuration we generate, with the phases of kubeadm init that need no kubelet, in a root of
// the test's own (--rootfs, the configuration inside it, as libs/control-plane does).

let programs: KubernetesPrograms;
beforeAll(async () => {
  programs = await locateKubernetesPrograms(kubernetesBinDir());
});

/** Runs `kubeadm init phase <phase>` for `input` in a fresh root; returns the root. */
async function initPhases(input: Omit<InitConfigInput, 'kubernetesVersion'>, phases: string[][]): Promise<string> {
  const root = await tempDirForTest();
  await mkdir(join(root, 'etc', 'kubernetes'), { recursive: true });
  const config = initConfiguration({ ...input, kubernetesVersion: programs.release });
  // It names a bootstrap token: 0600, as the bootstrapper writes it.
  await writeFile(join(root, 'kubeadm.yaml'), config, { mode: 0o600 });
  for (const phase of phases) {
    await runKubeadm(['init', 'phase', ...phase, '--rootfs', root, '--config', '/kubeadm.yaml'], {
      program: programs.path('kubeadm'),
      timeoutMs: 60_000,
    });
  }
  return root;
}

/** The certificate's subjectAltNames: DNS names as written, IPs in canonicalAddress form. */
function certificateAltNames(pem: string): { dnsNames: string[]; ips: string[] } {
  const entries = (new X509Certificate(pem).subjectAltName ?? '').split(', ');
  return {
    dnsNames: entries.filter((e) => e.startsWith('DNS:')).map((e) => e.slice('DNS:'.length)),
    ips: entries.filter((e) => e.startsWith('IP Address:')).map((e) => canonicalAddress(e.slice('IP Address:'.length))),
  };
}

const sorted = (names: { dnsNames: string[]; ips: string[] }): { dnsNames: string[]; ips: string[] } => ({
  dnsNames: [...names.dnsNames].sort(),
  ips: [...names.ips].sort(),
});

describe('the API server certificate real kubeadm makes from our init configuration', () => {
  it('carries exactly the names apiServerAltNames computes: a DNS endpoint, names in any case, IPv6 in any spelling', async () => {
    const input = {
      nodeName: 'control-plane-0',
      nodeIp: '10.42.0.10',
      bindPort: 6443,
      clusterName: 'constellation',
      controlPlaneEndpoint: 'api.example.test:6443',
      certSans: ['10.42.0.2', 'API.Example.test', 'lb.example.test', 'FD00::0002', ''],
      kubeProxy: false,
    };
    const root = await initPhases(input, [
      ['certs', 'all'],
      ['kubeconfig', 'all'],
    ]);
    const pki = join(root, 'etc', 'kubernetes', 'pki');
    const certificate = await readFile(join(pki, 'apiserver.crt'), 'utf8');
    expect(sorted(certificateAltNames(certificate))).toEqual(sorted(apiServerAltNames(input)));
    expect(new X509Certificate(certificate).checkIssued(new X509Certificate(await readFile(join(pki, 'ca.crt'))))).toBe(
      true,
    );
    // The kubeconfig phase points clients at the control-plane endpoint, which the certificate names.
    const admin = parse(await readFile(join(root, 'etc', 'kubernetes', 'admin.conf'), 'utf8')) as {
      clusters: { cluster: { server: string } }[];
    };
    expect(admin.clusters[0]?.cluster.server).toBe('https://api.example.test:6443');
  });

  it('with an IPv6 endpoint and a service subnet of its own', async () => {
    const input = {
      nodeName: 'cp-a',
      nodeIp: 'fd00::10',
      bindPort: 6443,
      clusterName: 'constellation',
      controlPlaneEndpoint: '[fd00::1]:6443',
      certSans: [],
      serviceCidr: '172.30.0.0/16',
      kubeProxy: true,
    };
    const root = await initPhases(input, [
      ['certs', 'ca'],
      ['certs', 'apiserver'],
    ]);
    const certificate = await readFile(join(root, 'etc', 'kubernetes', 'pki', 'apiserver.crt'), 'utf8');
    const names = certificateAltNames(certificate);
    expect(sorted(names)).toEqual(sorted(apiServerAltNames(input)));
    expect(names.ips).toContain('172.30.0.1');
  });
});
