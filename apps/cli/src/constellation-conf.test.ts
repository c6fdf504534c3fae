import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { atlsPublicRoot } from '@constellation/atls';
import { componentDigest, expectedMeasurements } from '@constellation/attestation';
import { tempDirForTest } from '@constellation/testing';
import { describe, expect, it } from 'vitest';
import { configYaml, loadClusterConfig } from './constellation-conf.js';
import type { ClusterConfig } from './constellation-conf.js';

const CONFIG: ClusterConfig = {
  name: 'c',
  kubernetesVersion: 'v1.32.9',
  initEndpoint: '10.42.0.10:9000',
  apiServerCertSans: [],
  serviceCidr: '10.96.0.0/12',
  attestation: {
    variant: 'tpm2-ek',
    measurements: expectedMeasurements([{ pcr: 9, description: 'bundle', digest: componentDigest('v1') }], [9, 15]),
    ekRoots: atlsPublicRoot().certificatePem,
    ekIntermediates: '',
    firstControlPlaneEk: 'ab'.repeat(32),
  },
};

describe('constellation-conf.yaml: the first control plane EK', () => {
  it('is written and read back; left out, it is a commented line', async () => {
    const dir = await tempDirForTest();
    const path = join(dir, 'constellation-conf.yaml');
    await writeFile(path, configYaml(CONFIG));
    expect(await loadClusterConfig(path)).toEqual(CONFIG);
    const { firstControlPlaneEk: _named, ...unnamed } = CONFIG.attestation as Extract<
      ClusterConfig['attestation'],
      { variant: 'tpm2-ek' }
    >;
    const text = configYaml({ ...CONFIG, attestation: unnamed });
    expect(text).toContain('  # firstControlPlaneEk: sha256:<64 hex digits>');
    await writeFile(path, text);
    expect((await loadClusterConfig(path)).attestation).toEqual(unnamed);
  });

  it('refuses a value that is not an EK hash, naming the field', async () => {
    const dir = await tempDirForTest();
    const path = join(dir, 'constellation-conf.yaml');
    await writeFile(path, configYaml(CONFIG).replace(`sha256:${'ab'.repeat(32)}`, 'AB12'));
    await expect(loadClusterConfig(path)).rejects.toThrow(
      'attestation.firstControlPlaneEk: must be sha256: and 64 lower-case hex digits (the EK hash of the machine at initEndpoint)',
    );
  });
});
