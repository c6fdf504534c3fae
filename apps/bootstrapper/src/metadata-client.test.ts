import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MetadataClient } from './metadata-client.js';

// A metadata service answering each path with a fixed body, so each answer's checks can be seen.
const answers: Record<string, string> = {
  '/self': JSON.stringify({ name: 'cp-0', role: 'control-plane', ip: '10.0.0.2', zone: 'ignored' }),
  '/peers': JSON.stringify([
    { name: 'cp-0', role: 'control-plane', ip: '10.0.0.2' },
    { name: 'w-0', role: 'pet' },
  ]),
  '/endpoint': JSON.stringify({ host: '10.0.0.2', apiServerPort: 6443, joinServicePort: '30090', initPort: 9000 }),
  '/initsecrethash': JSON.stringify({ initSecretHash: '' }),
};
const server = createServer((request, response) => {
  const body = answers[request.url ?? ''];
  response.writeHead(body === undefined ? 404 : 200, { 'content-type': 'application/json' });
  response.end(body ?? '{}');
});
let client: MetadataClient;

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  client = new MetadataClient(`http://127.0.0.1:${String((server.address() as AddressInfo).port)}`, 'cp-0', 5_000);
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

describe('MetadataClient answers', () => {
  it('keeps the known fields of a well-formed answer', async () => {
    await expect(client.self()).resolves.toEqual({ name: 'cp-0', role: 'control-plane', ip: '10.0.0.2' });
  });

  it('refuses a malformed answer naming the path and the field', async () => {
    await expect(client.peers()).rejects.toThrow(
      'instance metadata /peers: unexpected answer: 1.role: expected one of "control-plane", "worker", got "pet"',
    );
    await expect(client.endpoint()).rejects.toThrow(
      'instance metadata /endpoint: unexpected answer: joinServicePort: expected an integer, got a string',
    );
    await expect(client.initSecretHash()).rejects.toThrow('instance metadata has an empty init-secret hash');
  });

  it('treats 404 as "none" only where asked', async () => {
    await expect(client.instanceByEndorsementKey('ab')).resolves.toBeUndefined();
  });
});
