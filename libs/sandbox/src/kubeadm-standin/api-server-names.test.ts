import { describe, expect, it } from 'vitest';
import { apiServerCertificateNames } from './api-server-names.js';
import { loadInitConfig } from './config-load.js';

const load = (text: string): ReturnType<typeof loadInitConfig> => loadInitConfig(text, () => undefined);

describe("the kubeadm stand-in's API server certificate names", () => {
  // kubeadm's GetAPIServerAltNames (cmd/kubeadm/app/util/pkiutil/pki_helpers.go): node name,
  // kubernetes, kubernetes.default, kubernetes.default.svc, kubernetes.default.svc.<dnsDomain>;
  // GetAPIServerVirtualIP (index 1 of the first service subnet) and the advertise address; then
  // the controlPlaneEndpoint's host and the certSANs, each an IP or a DNS name. Nothing else: no
  // localhost, no loopback address unless a certSAN names it.
  it('are kubeadm defaults, the endpoint and the certSANs', () => {
    const { init, cluster } = load(`apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: 10.42.0.10
nodeRegistration:
  name: control-plane-0
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.32.9
controlPlaneEndpoint: api.example.test:6443
networking:
  serviceSubnet: 172.30.8.0/21
  dnsDomain: corp.example
apiServer:
  certSANs: [10.42.0.2, extra.example.test]
`);
    expect(apiServerCertificateNames(init, cluster)).toEqual({
      dnsNames: [
        'control-plane-0',
        'kubernetes',
        'kubernetes.default',
        'kubernetes.default.svc',
        'kubernetes.default.svc.corp.example',
        'api.example.test',
        'extra.example.test',
      ],
      ips: ['172.30.8.1', '10.42.0.10', '10.42.0.2'],
    });
  });

  it("take kubeadm's defaults: service subnet 10.96.0.0/12, cluster.local, the advertise address as endpoint", () => {
    const { init, cluster } = load(`apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: 10.42.0.10
nodeRegistration:
  name: control-plane-0
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.32.9
`);
    const names = apiServerCertificateNames(init, cluster);
    expect(names.ips).toEqual(['10.96.0.1', '10.42.0.10']);
    expect(names.dnsNames).toContain('kubernetes.default.svc.cluster.local');
    expect(names.dnsNames).not.toContain('localhost');
  });
});
