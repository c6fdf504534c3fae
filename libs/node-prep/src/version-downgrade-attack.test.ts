import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { freePort, sharedKubernetes } from '@constellation/testing';
import { beforeAll, describe, expect, it } from 'vitest';
import { MANIFEST_KIND } from './component-manifest.js';
import { signingKey, testNode } from './node-prep.fixture.js';
import type { SigningKey, TestNode } from './node-prep.fixture.js';
import { prepareNode } from './node-preparation.js';
import type { NodePreparationOptions } from './node-preparation.js';

/*
 * Attack (issue 42, item 4): silence downgrades node preparation. With the API server blocked and
 * no --minimum-kube-version (the default), node preparation fell back to the seed file and
 * prepared an older Kubernetes version for which a validly signed manifest exists. Now the node
 * records the highest version it accepted (as it records the highest manifest serial) and never
 * prepares an older one, a default minimum ships with node-prep, and the seed file is logged as a
 * downgrade risk when it is older than the API server's last known answer.
 */

let trusted: SigningKey;
beforeAll(async () => {
  trusted = await signingKey('release');
});

/** Signs and publishes a manifest for `version` (serial 11: newer than the fixture's 10). */
async function publishOlder(node: TestNode, version: string): Promise<void> {
  const manifest = {
    ...structuredClone(node.manifest),
    kubernetesVersion: version,
    serial: 11,
  };
  const bytes = Buffer.from(JSON.stringify(manifest));
  const dir = join(node.site, 'manifests/amd64-usr/3815.2.0');
  await writeFile(join(dir, `${version}.json`), bytes);
  await writeFile(join(dir, `${version}.json.asc`), await trusted.sign(bytes));
  expect(manifest).toMatchObject({ kind: MANIFEST_KIND });
}

/** The node's seed names `version` (the image's KUBELET_IMAGE_TAG). */
async function seed(node: TestNode, version: string): Promise<void> {
  await writeFile(
    join(node.root, 'etc/kubernetes/installer/kubelet.env'),
    `KUBELET_IMAGE_URL=registry.example/kubelet\nKUBELET_IMAGE_TAG=${version}\n`,
  );
}

/** The node asks the run's real API server (v1.37.2), pinned to its CA; no forced version. */
async function askingTheApiServer(node: TestNode): Promise<NodePreparationOptions> {
  const k = sharedKubernetes();
  await writeFile(join(node.root, 'etc/kubernetes/ca.crt'), k.caCertificatePem);
  const { forcedVersion: _forced, ...base } = node.options;
  return { ...base, apiServerUrl: k.apiServerUrl, apiServerCaPath: '/etc/kubernetes/ca.crt' };
}

/** The same API server, blocked: nothing answers at its address. */
const blocked = async (options: NodePreparationOptions): Promise<NodePreparationOptions> => ({
  ...options,
  apiServerUrl: `https://127.0.0.1:${String(await freePort())}`,
});

describe('node preparation when the API server is silent', () => {
  it('never prepares an older version than one it prepared before, whatever the source', async () => {
    const node = await testNode(trusted);
    const options = await askingTheApiServer(node);
    expect(await prepareNode(options)).toMatchObject({ kubernetesVersion: 'v1.37.2', versionSource: 'api-server' });
    // The node prepares again (kubelet.env gone), with the API server blocked, and its seed names
    // an older release for which a validly signed, newer manifest exists.
    await rm(join(node.root, 'etc/kubernetes/kubelet.env'));
    await seed(node, 'v1.36.4');
    await publishOlder(node, 'v1.36.4');
    await expect(prepareNode(await blocked(options))).rejects.toThrow(
      'Kubernetes version v1.36.4 from seed-file is older than v1.37.2, the highest version this node has prepared (downgrade refused)',
    );
    // Named outright, it is refused the same way.
    await expect(prepareNode({ ...node.options, forcedVersion: 'v1.36.4' })).rejects.toThrow(
      'Kubernetes version v1.36.4 from forced is older than v1.37.2, the highest version this node has prepared (downgrade refused)',
    );
    expect(await node.exists('etc/kubernetes/kubelet.env')).toBe(false);
    // The same version again is a re-run.
    expect(await prepareNode(node.options)).toMatchObject({ kubernetesVersion: 'v1.37.2' });
  });

  it('refuses a version older than the minimum that ships with node-prep when none is configured', async () => {
    const node = await testNode(trusted);
    await seed(node, 'v1.34.9');
    await publishOlder(node, 'v1.34.9');
    const { forcedVersion: _forced, ...options } = node.options;
    await expect(prepareNode(options)).rejects.toThrow(
      'Kubernetes version v1.34.9 from seed-file is older than the minimum v1.35.0 (downgrade refused)',
    );
    expect(node.host.requests).toEqual([]);
  });

  it("logs the seed file as a downgrade risk when it is older than the API server's last answer", async () => {
    const node = await testNode(trusted);
    const options = await askingTheApiServer(node);
    // The API server answers v1.37.2, but its manifest cannot be fetched yet: nothing is prepared.
    await rm(join(node.site, 'manifests/amd64-usr/3815.2.0/v1.37.2.json'));
    await expect(prepareNode(options)).rejects.toThrow(/v1\.37\.2\.json failed/);
    // Next run: the API server is blocked, and the seed names an older release.
    await seed(node, 'v1.36.4');
    await publishOlder(node, 'v1.36.4');
    expect(await prepareNode(await blocked(options))).toMatchObject({
      kubernetesVersion: 'v1.36.4',
      versionSource: 'seed-file',
    });
    const risk = node.logger.entries.find((e) => e.message.includes('downgrade risk'));
    expect(risk?.message).toBe(
      "the seed file's Kubernetes version is older than the API server's last known answer: a downgrade risk",
    );
    expect(risk?.fields).toMatchObject({ seed: 'v1.36.4', apiServer: 'v1.37.2' });
  });

  it('refuses a damaged version record instead of starting over', async () => {
    const node = await testNode(trusted);
    await mkdir(join(node.root, 'var/lib/constellation/node-prep'), { recursive: true });
    await writeFile(join(node.root, 'var/lib/constellation/node-prep/kubernetes-versions.json'), 'v1.0.0\n', {
      mode: 0o644,
    });
    await expect(prepareNode(node.options)).rejects.toThrow(
      /Kubernetes version record \/var\/lib\/constellation\/node-prep\/kubernetes-versions\.json is damaged/,
    );
  });
});
