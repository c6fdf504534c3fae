// Test fixture: the files the JoinService DaemonSet mounts (join-config, master secret, the host's
// shared control-plane PKI) and a kubeconfig for a real API server, readable by the image's
// non-root user.
import { randomBytes } from 'node:crypto';
import { chown, copyFile, mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { measurementsToFile } from '@constellation/attestation';
import {
  CertificateAuthority,
  SHARED_CONTROL_PLANE_PKI_FILES,
  generateMasterSecret,
  masterSecretToJson,
} from '@constellation/keys';

/** The cluster the JoinService is mounted for: its API server, and a service account's token. */
export interface MountedCluster {
  apiServerUrl: string;
  caCertificatePem: string;
  /** kubeadm's PKI directory (`etc/kubernetes/pki`): the shared control-plane PKI is copied from it. */
  pkiDir: string;
  /** A credential: written into the kubeconfig (0600), never logged. */
  token: string;
}

export async function writeJoinServiceMounts(root: string, cluster: MountedCluster, owner: number): Promise<void> {
  const config = join(root, 'config');
  const pki = join(root, 'pki');
  await mkdir(config, { recursive: true });
  await mkdir(join(pki, 'etcd'), { recursive: true });
  // PCR 15 is zero until the bootstrapper marks the node; the JoinService insists on that.
  const measurements = new Map([
    [4, { expected: randomBytes(32), warnOnly: false }],
    [9, { expected: randomBytes(32), warnOnly: false }],
    [15, { expected: Buffer.alloc(32), warnOnly: false }],
  ]);
  await writeFile(join(config, 'attestationConfig'), JSON.stringify(measurementsToFile(measurements)));
  await writeFile(join(config, 'measurementSalt'), randomBytes(32));
  await writeFile(join(config, 'ekRoots'), (await CertificateAuthority.generate('EK root')).certificatePem);
  await writeFile(join(root, 'mastersecret.json'), masterSecretToJson(generateMasterSecret()), { mode: 0o600 });
  // The files a control-plane host holds under /etc/kubernetes/pki, as kubeadm wrote them.
  for (const name of SHARED_CONTROL_PLANE_PKI_FILES) {
    await copyFile(join(cluster.pkiDir, name), join(pki, name));
  }
  await writeFile(
    join(root, 'kubeconfig'),
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'cluster',
          cluster: {
            server: cluster.apiServerUrl,
            'certificate-authority-data': Buffer.from(cluster.caCertificatePem).toString('base64'),
          },
        },
      ],
      users: [{ name: 'joinservice', user: { token: cluster.token } }],
      contexts: [{ name: 'cluster', context: { cluster: 'cluster', user: 'joinservice' } }],
      'current-context': 'cluster',
    }),
    { mode: 0o600 },
  );
  // The secrets stay 0600, owned by the user the container runs as.
  for (const entry of await readdir(root, { recursive: true })) await chown(join(root, entry), owner, owner);
  await chown(root, owner, owner);
}
