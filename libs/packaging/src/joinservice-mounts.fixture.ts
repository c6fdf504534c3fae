// Test fixture: the files the JoinService DaemonSet mounts (join-config, master secret, host PKI)
// and a kubeconfig for the API server stand-in, readable by the image's non-root user.
import { randomBytes } from 'node:crypto';
import { chown, mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { measurementsToFile } from '@constellation/attestation';
import {
  CertificateAuthority,
  SHARED_CONTROL_PLANE_PKI_FILES,
  generateMasterSecret,
  masterSecretToJson,
} from '@constellation/keys';

export async function writeJoinServiceMounts(root: string, apiUrl: string, owner: number): Promise<void> {
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
  const kubernetesCa = await CertificateAuthority.generate('kubernetes');
  await writeFile(join(pki, 'ca.crt'), kubernetesCa.certificatePem);
  await writeFile(join(pki, 'ca.key'), kubernetesCa.keyPem, { mode: 0o600 });
  for (const name of SHARED_CONTROL_PLANE_PKI_FILES.filter((n) => n !== 'ca.crt' && n !== 'ca.key')) {
    await writeFile(join(pki, name), `test content of ${name}\n`, { mode: 0o600 });
  }
  await writeFile(
    join(root, 'kubeconfig'),
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- name: stand-in',
      `  cluster: { server: "${apiUrl}" }`,
      'users:',
      '- name: joinservice',
      '  user: { token: stand-in }',
      'contexts:',
      '- name: stand-in',
      '  context: { cluster: stand-in, user: joinservice }',
      'current-context: stand-in',
      '',
    ].join('\n'),
  );
  // The secrets stay 0600, owned by the user the container runs as.
  for (const entry of await readdir(root, { recursive: true })) await chown(join(root, entry), owner, owner);
  await chown(root, owner, owner);
}
