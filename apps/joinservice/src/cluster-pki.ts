import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CertificateAuthority, SHARED_CONTROL_PLANE_PKI_FILES } from '@constellation/keys';
import type { ControlPlaneFile } from '@constellation/proto';

/** The cluster PKI as mounted from the host (`/etc/kubernetes/pki`), read-only. */
export class ClusterPki {
  readonly ca: CertificateAuthority;
  /** The CA's certificate as the host has it: joining nodes trust the API server by it. */
  readonly caCertificatePem: string;
  private readonly dir: string;

  private constructor(dir: string, ca: CertificateAuthority, caCertificatePem: string) {
    this.dir = dir;
    this.ca = ca;
    this.caCertificatePem = caCertificatePem;
  }

  static async load(dir: string): Promise<ClusterPki> {
    const certificate = await readFile(join(dir, 'ca.crt'), 'utf8');
    const key = await readFile(join(dir, 'ca.key'), 'utf8');
    return new ClusterPki(dir, await CertificateAuthority.fromPem(certificate, key), certificate);
  }

  /** The control-plane files, read fresh (they may have been rotated). Throws naming a missing file. */
  async controlPlaneFiles(): Promise<ControlPlaneFile[]> {
    return Promise.all(
      SHARED_CONTROL_PLANE_PKI_FILES.map(async (name) => {
        try {
          return { name, data: await readFile(join(this.dir, name)) };
        } catch {
          throw new Error(`control-plane PKI file ${name} is missing from ${this.dir}`);
        }
      }),
    );
  }
}
