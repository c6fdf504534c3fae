import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { atlsPublicRoot } from '@constellation/atls';
import { componentDigest, expectedMeasurements } from '@constellation/attestation';
import { DEFAULT_KUBERNETES_VERSION } from '@constellation/kubeadm';
import { tempDirForTest } from '@constellation/testing';
import { describe, expect, it } from 'vitest';
import { configYaml, loadClusterConfig } from './constellation-conf.js';
import type { ClusterConfig } from './constellation-conf.js';

const CONFIG: ClusterConfig = {
  name: 'c',
  kubernetesVersion: DEFAULT_KUBERNETES_VERSION,
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

describe('constellation-conf.yaml: the Kubernetes version', () => {
  const withVersion = async (version: string): Promise<string> => {
    const path = join(await tempDirForTest(), 'constellation-conf.yaml');
    await writeFile(path, configYaml({ ...CONFIG, kubernetesVersion: version }));
    return path;
  };

  it('is any patch release of the three maintained minors, which the file names', async () => {
    for (const version of ['v1.35.0', 'v1.36.7', 'v1.37.2', 'v1.37.11']) {
      expect((await loadClusterConfig(await withVersion(version))).kubernetesVersion).toBe(version);
    }
    expect(configYaml(CONFIG)).toContain('# Kubernetes version the nodes install: a release of v1.35, v1.36, v1.37.');
  });

  it('refuses a release out of support, naming the field, the value and the supported list', async () => {
    const path = await withVersion('v1.32.9');
    await expect(loadClusterConfig(path)).rejects.toThrow(
      `${path}: kubernetesVersion: Kubernetes v1.32.9 is not supported; supported are v1.35, v1.36, v1.37 (any patch release vX.Y.Z)`,
    );
    await expect(loadClusterConfig(await withVersion('v1.38.0'))).rejects.toThrow(
      'kubernetesVersion: Kubernetes v1.38.0 is not supported; supported are v1.35, v1.36, v1.37',
    );
  });

  it('refuses what is not a release', async () => {
    for (const version of ['latest', 'v1.37', 'v1.37.2-rc.1']) {
      await expect(loadClusterConfig(await withVersion(version)), version).rejects.toThrow(
        `kubernetesVersion: must be a release like ${DEFAULT_KUBERNETES_VERSION}, got "${version}"; supported are v1.35, v1.36, v1.37 (any patch release vX.Y.Z)`,
      );
    }
  });
});
