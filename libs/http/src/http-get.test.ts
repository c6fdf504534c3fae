import { Agent } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { startHttpServer } from '@constellation/testing';
import type { TestHttpServer } from '@constellation/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { httpGetText } from './http-get.js';

let server: TestHttpServer | undefined;

async function serve(
  answer: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ url: string; connections: () => number }> {
  server = await startHttpServer(answer);
  return { url: `${server.url}/path?x=1`, connections: server.connections };
}

afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('httpGetText', () => {
  it('returns status and body, sends the headers, and reuses a kept-alive connection', async () => {
    const { url, connections } = await serve((req, res) => {
      res.writeHead(req.headers['metadata-flavor'] === 'constellation' ? 200 : 400).end(`you asked ${req.url ?? ''}`);
    });
    const agent = new Agent({ keepAlive: true });
    for (let i = 0; i < 3; i++) {
      expect(
        await httpGetText(url, { headers: { 'metadata-flavor': 'constellation' }, timeoutMs: 2_000, agent }),
      ).toEqual({ status: 200, body: 'you asked /path?x=1' });
    }
    expect(connections()).toBe(1);
    agent.destroy();
  });

  it('bounds the body', async () => {
    const { url } = await serve((_req, res) => res.writeHead(200).end('x'.repeat(2_000)));
    await expect(httpGetText(url, { timeoutMs: 2_000, maxBytes: 1_000 })).rejects.toThrow(
      'answer larger than 1000 bytes',
    );
  });

  it('bounds the whole exchange, not only silence: a peer trickling bytes is cut off', async () => {
    const { url } = await serve((_req, res) => {
      res.writeHead(200);
      const drip = setInterval(() => res.write('.'), 20);
      res.once('close', () => {
        clearInterval(drip);
      });
    });
    await expect(httpGetText(url, { timeoutMs: 200 })).rejects.toThrow('no answer within 200 ms');
  });

  it('does not follow redirects', async () => {
    const { url } = await serve((_req, res) => res.writeHead(302, { location: 'http://example.invalid/' }).end());
    expect((await httpGetText(url, { timeoutMs: 2_000 })).status).toBe(302);
  });
});
