import { readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { freePort, runChecked, sharedKubernetes, tempDirForTest, withTimeout } from '@constellation/testing';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { signingKey, testNode } from './node-prep.fixture.js';
import type { SigningKey } from './node-prep.fixture.js';
import { prepareNode } from './node-preparation.js';
import { renderUrlTemplate } from './url-template.js';

let trusted: SigningKey;
beforeAll(async () => {
  trusted = await signingKey('release');
});

/** A cluster CA and a second, unrelated CA, made with openssl; the server certificate is for 127.0.0.1. */
async function clusterPki(): Promise<{ dir: string; caPem: string; otherCaPem: string; key: string; cert: string }> {
  const dir = await tempDirForTest();
  const openssl = (...args: string[]) => runChecked('openssl', args, { timeoutMs: 20_000, cwd: dir });
  for (const name of ['ca', 'other'])
    await openssl(
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-days',
      '2',
      '-subj',
      `/CN=${name}`,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.pem`,
    );
  await openssl(
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-subj',
    '/CN=apiserver',
    '-keyout',
    'server.key',
    '-out',
    'server.csr',
  );
  await writeFile(join(dir, 'ext.cnf'), 'subjectAltName=IP:127.0.0.1\n');
  await openssl(
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    'ext.cnf',
    '-out',
    'server.pem',
  );
  const read = (name: string) => readFile(join(dir, name), 'utf8');
  return {
    dir,
    caPem: await read('ca.pem'),
    otherCaPem: await read('other.pem'),
    key: await read('server.key'),
    cert: await read('server.pem'),
  };
}

async function apiServer(
  pki: { key: string; cert: string },
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<string> {
  const server = createServer({ key: pki.key, cert: pki.cert }, handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          resolve();
        });
      }),
  );
  const address = server.address();
  return `https://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`;
}

const gitVersion = (version: string) => (_req: IncomingMessage, res: ServerResponse) =>
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ gitVersion: version }));

describe('version discovery from the API server', () => {
  it("asks the real API server's /version over HTTPS pinned to the cluster CA, and refuses it certified by another CA", async () => {
    // The run's control plane: kubeadm's RBAC lets anyone read /version (system:public-info-viewer).
    const k = sharedKubernetes();
    const pki = await clusterPki();
    const node = await testNode(trusted);
    const { forcedVersion: _forced, ...base } = node.options;
    await writeFile(join(node.root, 'etc/kubernetes/ca.crt'), k.caCertificatePem);
    await writeFile(join(node.root, 'etc/kubernetes/other-ca.crt'), pki.otherCaPem);
    const pinned = { ...base, apiServerUrl: k.apiServerUrl, apiServerCaPath: '/etc/kubernetes/ca.crt' };
    // The fixture's manifest is for the release the programs are built at, which the API server runs.
    expect(k.release).toBe('v1.37.2');
    expect(await prepareNode(pinned)).toMatchObject({ versionSource: 'api-server', kubernetesVersion: k.release });
    // Another CA: the API server is not trusted, and the seed file (v1.36.0+node.1) is the fallback,
    // which is older than the v1.37.2 this node prepared (issue 42: it used to go on with it).
    await expect(prepareNode({ ...pinned, apiServerCaPath: '/etc/kubernetes/other-ca.crt' })).rejects.toThrow(
      'Kubernetes version v1.36.0+node.1 from seed-file is older than v1.37.2, the highest version this node has prepared (downgrade refused)',
    );
    expect(
      node.logger.entries.some(
        (e) =>
          e.message.startsWith('API server version unavailable') &&
          /self[- ]signed|unable to verify|certificate/i.test(String(e.fields['error'])),
      ),
    ).toBe(true);
  });

  it('refuses a forced or requested kubelet version outside the version-skew policy of the real API server', async () => {
    const k = sharedKubernetes();
    const node = await testNode(trusted);
    const { forcedVersion: _forced, ...base } = node.options;
    await writeFile(join(node.root, 'etc/kubernetes/ca.crt'), k.caCertificatePem);
    // A minimum below the default (v1.35.0), so that the skew policy is what refuses v1.33.9.
    const pinned = {
      ...base,
      apiServerUrl: k.apiServerUrl,
      apiServerCaPath: '/etc/kubernetes/ca.crt',
      minimumVersion: 'v1.30.0',
    };
    await expect(prepareNode({ ...pinned, forcedVersion: 'v1.38.0' })).rejects.toThrow(
      "Kubernetes version v1.38.0 from forced does not fit the API server's v1.37.2: a v1.38 kubelet must not be newer than the v1.37 API server (Kubernetes' version-skew policy)",
    );
    await expect(prepareNode({ ...pinned, requestVersion: 'v1.33.9' })).rejects.toThrow(
      "Kubernetes version v1.33.9 from request does not fit the API server's v1.37.2: a v1.33 kubelet is 4 minor versions older than the v1.37 API server (at most 3) (Kubernetes' version-skew policy)",
    );
    // Three minors older, and a newer patch of the same minor, are within the policy: preparation
    // goes on to fetch their manifests (the fixture publishes only v1.37.2's).
    await expect(prepareNode({ ...pinned, requestVersion: 'v1.34.0' })).rejects.toThrow(/v1\.34\.0\.json failed/);
    await expect(prepareNode({ ...pinned, forcedVersion: 'v1.37.9' })).rejects.toThrow(/v1\.37\.9\.json failed/);
    expect(await prepareNode({ ...pinned, requestVersion: 'v1.37.2' })).toMatchObject({ versionSource: 'request' });
  });

  it('keeps a forced version when the API server does not answer, saying it was not checked', async () => {
    const node = await testNode(trusted);
    const k = sharedKubernetes();
    await writeFile(join(node.root, 'etc/kubernetes/ca.crt'), k.caCertificatePem);
    const closed = `https://127.0.0.1:${String(await freePort())}`;
    const result = await prepareNode({
      ...node.options,
      apiServerUrl: closed,
      apiServerCaPath: '/etc/kubernetes/ca.crt',
    });
    expect(result).toMatchObject({ versionSource: 'forced', kubernetesVersion: 'v1.37.2' });
    expect(
      node.logger.entries.some(
        (e) => e.message === 'API server version unavailable; the kubelet version is not checked against it',
      ),
    ).toBe(true);
  });

  it('does not trust /version over plain http, nor https without a pinned CA', async () => {
    const node = await testNode(trusted);
    const { forcedVersion: _forced, ...base } = node.options;
    await expect(prepareNode({ ...base, apiServerUrl: 'http://127.0.0.1:1', seedFile: '/none' })).rejects.toThrow(
      /API server: http:\/\/127\.0\.0\.1:1 is not https; \/version is only trusted over TLS/,
    );
    await expect(prepareNode({ ...base, apiServerUrl: 'https://127.0.0.1:1', seedFile: '/none' })).rejects.toThrow(
      /API server: no cluster CA configured to pin the API server to/,
    );
  });

  it('reads at most 64 KiB of /version and at most 64 characters of version', async () => {
    const pki = await clusterPki();
    const node = await testNode(trusted);
    const { forcedVersion: _forced, ...base } = node.options;
    await writeFile(join(node.root, 'etc/kubernetes/ca.crt'), pki.caPem);
    let sent = 0;
    const endless = await apiServer(pki, (_req, res) => {
      res.writeHead(200);
      const chunk = Buffer.alloc(64 * 1024, ' ');
      const pump = (): void => {
        while (sent < 1024 * 1024 * 1024 && res.write(chunk)) sent += chunk.length;
        if (sent < 1024 * 1024 * 1024) res.once('drain', pump);
      };
      pump();
    });
    const options = { ...base, apiServerCaPath: '/etc/kubernetes/ca.crt', seedFile: '/none' };
    await expect(
      withTimeout(prepareNode({ ...options, apiServerUrl: endless }), 20_000, 'an endless /version'),
    ).rejects.toThrow(/API server: fetching https:.*\/version: https:.*\/version is larger than 65536 bytes/);
    expect(sent).toBeLessThan(32 * 1024 * 1024);
    const long = await apiServer(pki, gitVersion(`v1.37.2-${'a'.repeat(10_000)}`));
    await expect(prepareNode({ ...options, apiServerUrl: long })).rejects.toThrow(
      /^Kubernetes version from api-server is 10008 characters long \(at most 64\)$/,
    );
  });

  it('refuses a version older than the configured minimum, from any source', async () => {
    const pki = await clusterPki();
    const node = await testNode(trusted);
    const { forcedVersion: _forced, ...base } = node.options;
    await writeFile(join(node.root, 'etc/kubernetes/ca.crt'), pki.caPem);
    const url = await apiServer(pki, gitVersion('v1.34.0'));
    const options = { ...base, apiServerCaPath: '/etc/kubernetes/ca.crt', minimumVersion: 'v1.37.0' };
    await expect(prepareNode({ ...options, apiServerUrl: url })).rejects.toThrow(
      'Kubernetes version v1.34.0 from api-server is older than the minimum v1.37.0 (downgrade refused)',
    );
    await expect(prepareNode(options)).rejects.toThrow(
      'Kubernetes version v1.36.0+node.1 from seed-file is older than the minimum v1.37.0 (downgrade refused)',
    );
    await expect(prepareNode({ ...options, requestVersion: 'v1.37.0-rc.1' })).rejects.toThrow(/downgrade refused/);
    expect((await prepareNode({ ...options, requestVersion: 'v1.37.2' })).kubernetesVersion).toBe('v1.37.2');
  });
});

describe('manifest URL template values', () => {
  it('refuses an os-release VERSION_ID of ".." (it would walk the manifest URL path)', async () => {
    const node = await testNode(trusted);
    await writeFile(join(node.root, 'usr/lib/os-release'), 'VERSION_ID=..\nCOREOS_BOARD=amd64-usr\n');
    await expect(prepareNode(node.options)).rejects.toThrow(
      /manifest URL template value OSVersion "\.\." is not a safe path segment/,
    );
    expect(node.host.requests).toEqual([]);
  });

  it.each(['.', '..', '../x', 'a/b', 'a b', '%2e%2e', '', 'x'.repeat(65)])('refuses %j', (value) => {
    expect(() =>
      renderUrlTemplate('https://h/{{.Board}}', { Board: value, OSVersion: '1', KubernetesVersion: 'v1.0.0' }),
    ).toThrow(/is not a safe path segment/);
  });
});
