import { generateKeyPairSync } from 'node:crypto';
import { createServer } from 'node:https';
import type { Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { CertificateAuthority, caPublicKeyPin } from '@constellation/keys';
import { afterEach, describe, expect, it } from 'vitest';
import { computeDetachedSignature } from '../bootstrap-jws.js';
import type { ResolvedJoin } from './config-defaults.js';
import { DiscoveryError, discoverCluster } from './discovery.js';
import { kubeconfig } from './kubeconfig.js';

// Token discovery's second, pinned fetch (cmd/kubeadm/app/discovery/token/token.go
// retrieveValidatedConfigInfo, buildSecureBootstrapKubeConfig) is a client-go request to
// https://<apiServerEndpoint> trusting the cluster CA: Go's crypto/tls then also checks that the
// API server's certificate names the endpoint's host (tls.Config.ServerName from the URL,
// x509.Certificate.VerifyHostname). An endpoint the certificate does not name fails there.

const TOKEN_ID = 'abcdef';
const TOKEN_SECRET = '0123456789abcdef';
const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

/** A server answering cluster-info (signed for the token) with a certificate for `ips` only. */
async function clusterInfoServer(ips: string[]): Promise<{ endpoint: string; pin: string }> {
  const { ca, certificatePem } = await CertificateAuthority.generate('kubernetes');
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const cert = await ca.issueCertificate({
    commonName: 'kube-apiserver',
    publicKey,
    ips,
    dnsNames: ['kubernetes'],
    usage: 'server',
  });
  const server = createServer({ cert, key: privateKey.export({ type: 'pkcs8', format: 'pem' }) }, (_req, res) => {
    const content = kubeconfig({
      clusterName: '',
      server: 'https://127.0.0.1:6443',
      caPem: certificatePem,
      userName: '',
    });
    const data = {
      kubeconfig: content,
      [`jws-kubeconfig-${TOKEN_ID}`]: computeDetachedSignature(content, TOKEN_ID, TOKEN_SECRET),
    };
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ kind: 'ConfigMap', data }));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { endpoint: `127.0.0.1:${(server.address() as AddressInfo).port}`, pin: caPublicKeyPin(certificatePem) };
}

function joinConfig(endpoint: string, pin: string): ResolvedJoin {
  return {
    nodeRegistration: {
      name: 'worker-1',
      criSocket: 'unix:///run/containerd/containerd.sock',
      kubeletExtraArgs: [],
      nodeIp: undefined,
      ignorePreflightErrors: [],
      taints: [],
    },
    apiServerEndpoint: endpoint,
    token: `${TOKEN_ID}.${TOKEN_SECRET}`,
    tlsBootstrapToken: `${TOKEN_ID}.${TOKEN_SECRET}`,
    caCertHashes: [pin],
    unsafeSkipCAVerification: false,
    controlPlane: undefined,
    skipPhases: [],
    discoveryTimeoutMs: 1_000,
    tlsBootstrapTimeoutMs: 1_000,
    kubernetesApiCallMs: 1_000,
  };
}

describe('token discovery over TLS verified against the pinned CA (discovery/token/token.go)', () => {
  it('buildSecureBootstrapKubeConfig: refuses an API server whose certificate does not name the endpoint', async () => {
    const { endpoint, pin } = await clusterInfoServer(['10.0.0.1']);
    const error = await discoverCluster(joinConfig(endpoint, pin), () => undefined).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(DiscoveryError);
    expect((error as Error).message).toMatch(/^failed to request the cluster-info ConfigMap: .*127\.0\.0\.1/);
  });

  it('accepts the same server when its certificate names the endpoint', async () => {
    const { endpoint, pin } = await clusterInfoServer(['10.0.0.1', '127.0.0.1']);
    const cluster = await discoverCluster(joinConfig(endpoint, pin), () => undefined);
    expect(cluster.server).toBe('https://127.0.0.1:6443');
  });
});
