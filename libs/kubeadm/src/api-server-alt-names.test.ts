import { describe, expect, it } from 'vitest';
import {
  apiServerAltNames,
  endpointHost,
  isKubernetesServiceName,
  kubernetesServiceAddress,
} from './api-server-alt-names.js';
import { parse } from 'yaml';
import { canonicalAddressOrUndefined } from './canonical-address.js';
import { initConfiguration } from './kubeadm-config.js';
import type { InitConfigInput } from './kubeadm-config.js';
import { DEFAULT_KUBERNETES_VERSION } from './kubernetes-version.js';

const INPUT: InitConfigInput = {
  nodeName: 'control-plane-0',
  nodeIp: '10.42.0.10',
  bindPort: 6443,
  clusterName: 'constellation',
  kubernetesVersion: DEFAULT_KUBERNETES_VERSION,
  controlPlaneEndpoint: 'api.example.test:6443',
  certSans: ['10.42.0.2', 'API.example.test', 'FD00::0002', ''],
  kubeProxy: false,
};

describe('apiServerAltNames', () => {
  // kubeadm's GetAPIServerAltNames (cmd/kubeadm/app/util/pkiutil/pki_helpers.go): node name,
  // kubernetes, kubernetes.default, kubernetes.default.svc, kubernetes.default.svc.<dnsDomain>;
  // the service subnet's first address and the advertise address; the controlPlaneEndpoint's
  // host and each certSAN initConfiguration writes (with the loopback and the node's address), as
  // an IP when it parses as one, else as a DNS name.
  it("names what kubeadm's API server certificate names", () => {
    expect(apiServerAltNames(INPUT)).toEqual({
      dnsNames: [
        'control-plane-0',
        'kubernetes',
        'kubernetes.default',
        'kubernetes.default.svc',
        'kubernetes.default.svc.cluster.local',
        'api.example.test',
      ],
      ips: ['10.96.0.1', '10.42.0.10', '127.0.0.1', '10.42.0.2', 'fd00::2'],
    });
  });

  it('holds every certSAN of the configuration kubeadm init is given', () => {
    const written = parse(initConfiguration(INPUT).split('---\n')[1] ?? '') as { apiServer: { certSANs: string[] } };
    const names = apiServerAltNames(INPUT);
    for (const san of written.apiServer.certSANs) {
      expect([...names.dnsNames, ...names.ips], san).toContain(canonicalAddressOrUndefined(san) ?? san.toLowerCase());
    }
  });

  it('takes the service address from the configured service subnet and an IP endpoint as an address', () => {
    const names = apiServerAltNames({
      ...INPUT,
      serviceCidr: '172.30.0.0/16',
      controlPlaneEndpoint: '[fd00::10]:6443',
      certSans: [],
    });
    expect(names.ips).toEqual(['172.30.0.1', '10.42.0.10', 'fd00::10', '127.0.0.1']);
    expect(names.dnsNames).not.toContain('fd00::10');
  });
});

describe('kubernetesServiceAddress', () => {
  // kubeadm's GetAPIServerVirtualIP (cmd/kubeadm/app/constants/constants.go): GetIndexedIP(first
  // service subnet, 1), the network address with its host bits cleared, plus one.
  it("is the first service subnet's network address plus one", () => {
    expect(kubernetesServiceAddress('10.96.0.0/12')).toBe('10.96.0.1');
    expect(kubernetesServiceAddress('10.100.7.9/12')).toBe('10.96.0.1');
    expect(kubernetesServiceAddress('10.0.0.255/31')).toBe('10.0.0.255');
    expect(kubernetesServiceAddress('fd00:10:96::/108, 10.96.0.0/12')).toBe('fd00:10:96::1');
    expect(kubernetesServiceAddress('fd00::ffff:ffff/112')).toBe('fd00::ffff:1');
  });

  it('refuses a subnet without host addresses or one that is no CIDR, naming it', () => {
    expect(() => kubernetesServiceAddress('10.96.0.1/32')).toThrow(
      'service subnet "10.96.0.1/32": prefix 32 leaves no host addresses',
    );
    expect(() => kubernetesServiceAddress('10.96.0.0')).toThrow(
      'service subnet "10.96.0.0" is not an address/prefix CIDR',
    );
    expect(() => kubernetesServiceAddress('services/12')).toThrow('is not an address/prefix CIDR');
  });
});

describe('isKubernetesServiceName', () => {
  it("is the kubernetes Service's name in any cluster domain, any case, with or without the root dot", () => {
    for (const name of [
      'kubernetes',
      'kubernetes.default',
      'kubernetes.default.svc',
      'kubernetes.default.svc.cluster.local',
      'Kubernetes.Default.Svc.corp.example.',
    ])
      expect(isKubernetesServiceName(name), name).toBe(true);
    for (const name of ['kubernetes-worker-1', 'kubernetes.example.com', 'worker-1']) {
      expect(isKubernetesServiceName(name), name).toBe(false);
    }
  });
});

describe('endpointHost', () => {
  it("is the host of host:port, [v6]:port or a bare host, as kubeadm's ParseHostPort reads it", () => {
    expect(endpointHost('api.example.test:6443')).toBe('api.example.test');
    expect(endpointHost('10.42.0.2:6443')).toBe('10.42.0.2');
    expect(endpointHost('[fd00::2]:6443')).toBe('fd00::2');
    expect(endpointHost('fd00::2')).toBe('fd00::2');
    expect(endpointHost('api.example.test')).toBe('api.example.test');
  });
});
