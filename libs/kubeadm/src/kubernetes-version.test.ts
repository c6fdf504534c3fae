import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { locateKubernetesPrograms } from '@constellation/kubernetes-programs';
import { kubernetesBinDir } from '@constellation/testing';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_KUBERNETES_VERSION,
  SUPPORTED_KUBERNETES_MINORS,
  unsupportedKubernetesVersion,
} from './kubernetes-version.js';

const GO_MOD = join(import.meta.dirname, '..', '..', '..', 'tools', 'kubernetes', 'k8s', 'go.mod');

describe('the default Kubernetes version', () => {
  it('is the release the real programs are built at (tools/kubernetes/k8s/go.mod) and the built kubeadm is', async () => {
    const pinned = /^require k8s\.io\/kubernetes (v\S+)/m.exec(await readFile(GO_MOD, 'utf8'))?.[1];
    expect(pinned).toBe(DEFAULT_KUBERNETES_VERSION);
    expect((await locateKubernetesPrograms(kubernetesBinDir())).release).toBe(DEFAULT_KUBERNETES_VERSION);
  });

  it('is of the newest supported minor', () => {
    expect(unsupportedKubernetesVersion(DEFAULT_KUBERNETES_VERSION)).toBeUndefined();
    expect(DEFAULT_KUBERNETES_VERSION.startsWith(`v${SUPPORTED_KUBERNETES_MINORS.at(-1) ?? ''}.`)).toBe(true);
  });
});

describe('supported Kubernetes versions', () => {
  it('are any patch release of the three maintained minors', () => {
    for (const version of ['v1.35.0', 'v1.35.14', 'v1.36.3', 'v1.37.2', 'v1.37.10']) {
      expect(unsupportedKubernetesVersion(version), version).toBeUndefined();
    }
  });

  it('refuses other minors, naming the version and the supported list', () => {
    expect(unsupportedKubernetesVersion('v1.32.9')).toBe(
      'Kubernetes v1.32.9 is not supported; supported are v1.35, v1.36, v1.37 (any patch release vX.Y.Z)',
    );
    for (const version of ['v1.34.12', 'v1.38.0', 'v2.35.0']) {
      expect(unsupportedKubernetesVersion(version), version).toMatch(/ is not supported; supported are v1\.35, /);
    }
  });

  it('refuses what is not a release, showing what was given', () => {
    expect(unsupportedKubernetesVersion('latest')).toBe(
      'must be a release like v1.37.2, got "latest"; supported are v1.35, v1.36, v1.37 (any patch release vX.Y.Z)',
    );
    for (const version of ['1.37.2', 'v1.37', 'v1.37.2-rc.1', 'v1.37.2+build', 'v1.037.2', ' v1.37.2', '']) {
      expect(unsupportedKubernetesVersion(version), version).toMatch(/^must be a release like v1\.37\.2, got /);
    }
  });
});
