import type { IncomingMessage, ServerResponse } from 'node:http';
import { startHttpServer } from '@constellation/testing';
import type { TestHttpServer } from '@constellation/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpInstanceRegistry } from './instance-registry.js';

const EK = 'a'.repeat(64);
const OTHER_EK = 'b'.repeat(64);

let server: TestHttpServer | undefined;

async function registry(
  answer: (req: IncomingMessage, res: ServerResponse) => void,
  timeoutMs = 2_000,
): Promise<{ registry: HttpInstanceRegistry; connections: () => number }> {
  server = await startHttpServer(answer);
  return { registry: new HttpInstanceRegistry(`${server.url}/`, timeoutMs), connections: server.connections };
}

afterEach(async () => {
  await server?.close();
  server = undefined;
});

const json = (res: ServerResponse, status: number, body: unknown): void => {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
};

describe('HttpInstanceRegistry', () => {
  it('finds a registered machine by its EK hash, over one kept-alive connection', async () => {
    const { registry: r, connections } = await registry((req, res) => {
      const ek = new URL(req.url ?? '/', 'http://x').searchParams.get('ek');
      if (ek !== EK) {
        json(res, 404, {});
        return;
      }
      json(res, 200, { name: 'worker-1', role: 'worker', ip: '10.0.0.1', ekPublicKeyHash: EK });
    });
    for (let i = 0; i < 3; i++) {
      expect(await r.byEndorsementKey(EK)).toEqual({
        name: 'worker-1',
        role: 'worker',
        ips: ['10.0.0.1'],
        ekPublicKeyHash: EK,
      });
    }
    expect(await r.byEndorsementKey(OTHER_EK)).toBeUndefined();
    expect(connections()).toBe(1);
  });

  it('refuses answers it cannot trust, saying why', async () => {
    let answer: (res: ServerResponse) => void = () => undefined;
    const { registry: r } = await registry((_req, res) => {
      answer(res);
    });
    answer = (res) => {
      json(res, 503, {});
    };
    await expect(r.byEndorsementKey(EK)).rejects.toThrow(/answered HTTP 503/);
    answer = (res) => res.writeHead(200).end('not json');
    await expect(r.byEndorsementKey(EK)).rejects.toThrow(/an answer that is not JSON/);
    answer = (res) => {
      json(res, 200, { name: 'worker-1', role: 'worker', ip: '10.0.0.1', ekPublicKeyHash: OTHER_EK });
    };
    await expect(r.byEndorsementKey(EK)).rejects.toThrow(/answered for another endorsement key/);
    answer = (res) => {
      json(res, 200, { name: 'worker-1', role: 'root', ip: '10.0.0.1', ekPublicKeyHash: EK });
    };
    await expect(r.byEndorsementKey(EK)).rejects.toThrow(/malformed instance/);
    answer = (res) => res.writeHead(200).end('x'.repeat(100 * 1024));
    await expect(r.byEndorsementKey(EK)).rejects.toThrow(/did not answer: answer larger than 65536 bytes/);
  });

  it('gives up on a registry that does not answer, within its bound', async () => {
    const { registry: r } = await registry(() => undefined, 200);
    await expect(r.byEndorsementKey(EK)).rejects.toThrow(/did not answer: no answer within 200 ms/);
  });
});
