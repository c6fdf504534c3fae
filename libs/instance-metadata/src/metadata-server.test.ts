import { mkdir, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { join } from 'node:path';
import { createTempDir } from '@constellation/testing';
import type { TempDir } from '@constellation/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MetadataServer } from './metadata-server.js';
import type { MetadataDocument } from './metadata-server.js';

const EK = 'ab'.repeat(32);
const document: MetadataDocument = {
  instances: [
    { name: 'control-plane-0', role: 'control-plane', ip: '127.0.0.1', ekPublicKeyHash: EK },
    { name: 'worker-1', role: 'worker', ip: '10.42.7.11' },
  ],
  endpoint: { host: '10.42.7.1', apiServerPort: 6443, joinServicePort: 30090, initPort: 0 },
  initSecretHash: 'scrypt$hash',
};
let server: MetadataServer;
let artifacts: TempDir;

/** One request, raw: status and body as text, without redirects or retries. */
function get(
  path: string,
  options: { method?: string; node?: string } = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${server.url}${path}`,
      {
        method: options.method ?? 'GET',
        timeout: 5_000,
        headers: options.node === undefined ? {} : { 'x-constellation-node': options.node },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, body });
        });
      },
    );
    req.once('timeout', () => req.destroy(new Error(`${path}: no answer within 5 s`)));
    req.once('error', reject);
    req.end();
  });
}

beforeAll(async () => {
  artifacts = await createTempDir('instance-metadata-');
  await mkdir(join(artifacts.path, 'manifests'));
  await writeFile(join(artifacts.path, 'manifests', 'v1.json'), '{"serial":1}');
  server = await MetadataServer.start(document, 0, '127.0.0.1', artifacts.path);
});

afterAll(async () => {
  await server.close();
  await artifacts.remove();
});

describe('the instance metadata service', () => {
  it("answers /self with the machine at the caller's address, or the one a header names", async () => {
    expect(JSON.parse((await get('/self')).body)).toMatchObject({ name: 'control-plane-0' });
    expect(JSON.parse((await get('/self', { node: 'worker-1' })).body)).toMatchObject({ ip: '10.42.7.11' });
    expect(await get('/self', { node: 'worker-9' })).toEqual({
      status: 404,
      body: JSON.stringify({ error: 'no instance for worker-9' }),
    });
  });

  it('answers /peers, /endpoint and /initsecrethash from the document, and sees its updates', async () => {
    expect(JSON.parse((await get('/peers')).body)).toEqual(document.instances);
    expect(JSON.parse((await get('/endpoint')).body)).toEqual(document.endpoint);
    server.update((doc) => ({ ...doc, initSecretHash: 'scrypt$other' }));
    expect(JSON.parse((await get('/initsecrethash')).body)).toEqual({ initSecretHash: 'scrypt$other' });
  });

  it('is the instance registry: a machine by its endorsement key hash, a malformed hash refused', async () => {
    expect(JSON.parse((await get(`/instances?ek=${EK}`)).body)).toMatchObject({ name: 'control-plane-0' });
    expect((await get(`/instances?ek=${'cd'.repeat(32)}`)).status).toBe(404);
    const malformed = await get(`/instances?ek=${EK.toUpperCase()}`);
    expect(malformed.status).toBe(400);
    expect(malformed.body).toContain('query parameter ek must be 64 lower-case hex digits');
  });

  it('serves artifacts below its directory only, and only GET', async () => {
    expect(await get('/artifacts/manifests/v1.json')).toEqual({ status: 200, body: '{"serial":1}' });
    expect((await get('/artifacts/manifests/v2.json')).status).toBe(404);
    expect(await get('/artifacts/..%2f..%2fetc%2fhostname')).toEqual({
      status: 400,
      body: JSON.stringify({ error: 'bad artifact path' }),
    });
    expect((await get('/self', { method: 'POST' })).status).toBe(405);
    expect((await get('/nothing')).status).toBe(404);
  });
});
