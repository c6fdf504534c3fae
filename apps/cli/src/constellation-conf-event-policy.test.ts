import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { atlsPublicRoot } from '@constellation/atls';
import { bootEventPolicy, componentDigest, expectedMeasurements } from '@constellation/attestation';
import { DEFAULT_KUBERNETES_VERSION } from '@constellation/kubeadm';
import { tempDirForTest } from '@constellation/testing';
import { describe, expect, it } from 'vitest';
import { attestationPolicy, configYaml, loadClusterConfig } from './constellation-conf.js';
import type { ClusterConfig } from './constellation-conf.js';

const BOOT = [
  { pcr: 4, description: 'kernel', digest: componentDigest('kernel v1') },
  { pcr: 9, description: 'bundle', digest: componentDigest('v1') },
];
const CONFIG: ClusterConfig = {
  name: 'c',
  kubernetesVersion: DEFAULT_KUBERNETES_VERSION,
  initEndpoint: '10.42.0.10:9000',
  apiServerCertSans: [],
  serviceCidr: '10.96.0.0/12',
  attestation: {
    variant: 'tpm2-ek',
    measurements: expectedMeasurements(BOOT, [4, 9, 15]),
    eventPolicy: { secureBoot: 'enabled', ...bootEventPolicy(BOOT) },
    ekRoots: atlsPublicRoot().certificatePem,
    ekIntermediates: '',
  },
};

describe('constellation-conf.yaml: the policy on boot events', () => {
  it('is written and read back, and reaches the verifier; left out, it is a commented example', async () => {
    const dir = await tempDirForTest();
    const path = join(dir, 'constellation-conf.yaml');
    await writeFile(path, configYaml(CONFIG));
    const loaded = await loadClusterConfig(path);
    expect(loaded).toEqual(CONFIG);
    const unrooted = { variant: 'qemu-vtpm' as const, measurements: loaded.attestation.measurements };
    const withPolicy = { ...unrooted, eventPolicy: loaded.attestation.eventPolicy! };
    expect(attestationPolicy(withPolicy).eventPolicy).toEqual(CONFIG.attestation.eventPolicy);
    // verify reports the policy instead of refusing the connection
    expect(attestationPolicy(withPolicy, undefined, { enforceEventPolicy: false }).eventPolicy).toBeUndefined();
    const { eventPolicy: _none, ...without } = CONFIG.attestation;
    const text = configYaml({ ...CONFIG, attestation: without });
    expect(text).toContain('  # eventPolicy:\n  #   secureBoot: enabled');
    await writeFile(path, text);
    expect((await loadClusterConfig(path)).attestation.eventPolicy).toBeUndefined();
  });

  it('refuses a bad rule, naming the file and the field', async () => {
    const dir = await tempDirForTest();
    const path = join(dir, 'constellation-conf.yaml');
    await writeFile(path, configYaml(CONFIG).replace('\n    secureBoot: enabled', '\n    secureBoot: on'));
    await expect(loadClusterConfig(path)).rejects.toThrow(
      `${path}: attestation: eventPolicy.secureBoot: expected "enabled" (or leave the rule out)`,
    );
  });
});
