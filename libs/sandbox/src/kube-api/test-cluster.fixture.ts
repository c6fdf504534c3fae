import { generateKeyPairSync } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { CertificateAuthority } from '@constellation/keys';
import { createTempDir, requireProgram, runCommand } from '@constellation/testing';
import type { CommandResult } from '@constellation/testing';
import { KubeApiServer, RESOURCE_TYPES } from '../kube-api-server.js';
import type { KubeApiAuthentication } from './access-control.js';
import { kubeconfig } from '../kubeadm-standin/kubeconfig.js';
import type { ResourceType } from '../kube-object-store.js';

export interface ClientIdentity {
  certPem: string;
  keyPem: string;
}

/** A TLS API stand-in with a cluster CA and client certificates issued by it, as kubeadm sets up. */
export interface TestCluster {
  api: KubeApiServer;
  ca: CertificateAuthority;
  /** The cluster CA's certificate, as clients pin it. */
  caPem: string;
  dir: string;
  /** The server's token-auth file (it may not exist yet: no tokens). */
  tokenAuthFile: string;
  /** A client certificate from the cluster CA. */
  issueClient(
    commonName: string,
    organisations: readonly string[],
    usage?: 'client' | 'server',
  ): Promise<ClientIdentity>;
  /** Writes a kubeconfig (0600) for this server and returns its path. */
  writeKubeconfig(name: string, user: { client?: ClientIdentity; token?: string }): Promise<string>;
  close(): Promise<void>;
}

export function resourceType(resource: string): ResourceType {
  const type = RESOURCE_TYPES.find((t) => t.resource === resource);
  if (type === undefined) throw new Error(`the stand-in serves no ${resource}`);
  return type;
}

export async function startTestCluster(
  authentication: Omit<KubeApiAuthentication, 'clientCaPem' | 'tokenAuthFile'> = {},
): Promise<TestCluster> {
  const temp = await createTempDir('kube-api-');
  const tokenAuthFile = join(temp.path, 'tokens.csv');
  const { ca, certificatePem: caPem } = await CertificateAuthority.generate('kubernetes');
  const serverKey = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const serverCert = await ca.issueCertificate({
    commonName: 'kube-apiserver',
    publicKey: serverKey.publicKey,
    ips: ['127.0.0.1'],
    dnsNames: ['localhost'],
    usage: 'server',
  });
  const api = await KubeApiServer.start({
    tls: { cert: serverCert, key: serverKey.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() },
    authentication: { clientCaPem: caPem, tokenAuthFile, ...authentication },
  });
  let counter = 0;
  return {
    api,
    ca,
    caPem,
    dir: temp.path,
    tokenAuthFile,
    async issueClient(commonName, organisations, usage = 'client') {
      const key = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      const certPem = await ca.issueCertificate({ commonName, organisations, publicKey: key.publicKey, usage });
      return { certPem, keyPem: key.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };
    },
    async writeKubeconfig(name, user) {
      const path = join(temp.path, `${name}-${++counter}.conf`);
      const text = kubeconfig({
        clusterName: 'kubernetes',
        server: api.url,
        caPem: caPem,
        userName: name,
        ...(user.client === undefined ? {} : { clientCertPem: user.client.certPem, clientKeyPem: user.client.keyPem }),
        ...(user.token === undefined ? {} : { token: user.token }),
      });
      await writeFile(path, text, { mode: 0o600 });
      return path;
    },
    async close() {
      await api.close();
      await temp.remove();
    },
  };
}

/**
 * Runs the real kubectl against a kubeconfig, bounded in time, with a discovery cache of its own
 * per kubeconfig in the test's directory (no state shared with ~/.kube or between identities).
 */
export async function kubectl(
  cluster: TestCluster,
  kubeconfigPath: string,
  args: readonly string[],
): Promise<CommandResult> {
  const program = await requireProgram('kubectl', 'kubernetes-client');
  return runCommand(
    program,
    [
      '--kubeconfig',
      kubeconfigPath,
      '--cache-dir',
      join(cluster.dir, `cache-${basename(kubeconfigPath)}`),
      '--request-timeout=10s',
      ...args,
    ],
    { timeoutMs: 30_000, env: { PATH: process.env['PATH'] ?? '', HOME: cluster.dir } },
  );
}
