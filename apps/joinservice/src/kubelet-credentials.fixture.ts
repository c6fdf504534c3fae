// Test fixture: what a joined node does with its ticket's credentials against the real API
// server: kubectl as its kubelet (the ticket's client certificate) or with its bootstrap token.
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Kubectl, tokenKubeconfig } from '@constellation/kubernetes-programs';
import type { JoinTicket } from '@constellation/proto';
import type { JoinFixture } from './join-service.fixture.js';

type Cluster = Pick<JoinFixture, 'cluster' | 'dir'>;

async function kubectlWith(fixture: Cluster, kubeconfig: string): Promise<Kubectl> {
  const path = join(fixture.dir.path, `kubeconfig-${randomBytes(4).toString('hex')}`);
  await writeFile(path, kubeconfig, { mode: 0o600 });
  return new Kubectl(fixture.cluster.programs, path);
}

/** kubectl with the kubelet client certificate (and its key) that a join ticket carried. */
export function kubeletKubectl(
  fixture: Cluster,
  joined: { ticket: Pick<JoinTicket, 'kubeletClientCert'>; clientKeyPem: string },
): Promise<Kubectl> {
  const base64 = (text: string | Uint8Array): string => Buffer.from(text).toString('base64');
  const kubeconfig = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'cluster',
        cluster: {
          server: fixture.cluster.apiServerUrl,
          'certificate-authority-data': base64(fixture.cluster.caCertificatePem),
        },
      },
    ],
    users: [
      {
        name: 'kubelet',
        user: {
          'client-certificate-data': base64(joined.ticket.kubeletClientCert),
          'client-key-data': base64(joined.clientKeyPem),
        },
      },
    ],
    contexts: [{ name: 'default', context: { cluster: 'cluster', user: 'kubelet' } }],
    'current-context': 'default',
  };
  return kubectlWith(fixture, JSON.stringify(kubeconfig));
}

/** kubectl that authenticates with a join ticket's bootstrap token, as kubeadm join's TLS bootstrap does. */
export function bootstrapTokenKubectl(fixture: Cluster, token: string): Promise<Kubectl> {
  return kubectlWith(
    fixture,
    tokenKubeconfig({ server: fixture.cluster.apiServerUrl, caPem: fixture.cluster.caCertificatePem, token }),
  );
}

/** The Node object a kubelet registers for itself (the least kube-apiserver accepts). */
export function nodeObject(name: string): object {
  return { apiVersion: 'v1', kind: 'Node', metadata: { name, labels: { 'kubernetes.io/hostname': name } } };
}
