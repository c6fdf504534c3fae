import type { IncomingMessage, ServerResponse } from 'node:http';
import { startHttpServer } from '@constellation/testing';
import type { TestHttpServer } from '@constellation/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpInstanceRegistry } from './instance-registry.js';

/*
 * A registry that misbehaves (a fault, or a network attacker in the middle): every join waits for
 * its answer while holding a join slot, so each lookup must end within its bound, whatever the
 * registry sends or how slowly.
 */

const EK = 'c'.repeat(64);
const INSTANCE = { name: 'worker-1', role: 'worker', ip: '10.0.0.1', ekPublicKeyHash: EK };

let server: TestHttpServer | undefined;
const timers: NodeJS.Timeout[] = [];

async function registry(
  answer: (req: IncomingMessage, res: ServerResponse) => void,
  timeoutMs: number,
): Promise<HttpInstanceRegistry> {
  server = await startHttpServer(answer);
  return new HttpInstanceRegistry(server.url, timeoutMs);
}

afterEach(async () => {
  for (const timer of timers.splice(0)) clearInterval(timer);
  await server?.close();
  server = undefined;
});

async function failure(lookup: Promise<unknown>): Promise<{ message: string; ms: number }> {
  const started = Date.now();
  try {
    await lookup;
  } catch (err) {
    return { message: err instanceof Error ? err.message : String(err), ms: Date.now() - started };
  }
  throw new Error('the lookup was expected to fail');
}

describe('HttpInstanceRegistry against a misbehaving registry', () => {
  it('bounds the whole call: a registry trickling its answer a byte at a time is given up on', async () => {
    const r = await registry((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      // A byte every 100 ms: never silent for the timeout, never done.
      timers.push(setInterval(() => res.write(' '), 100));
    }, 800);
    const { message, ms } = await failure(r.byEndorsementKey(EK));
    expect(message).toMatch(/did not answer: no answer within 800 ms/);
    expect(ms).toBeLessThan(2_000);
  });

  it('bounds the whole call: headers trickled slower than the bound', async () => {
    const r = await registry((req) => {
      const socket = req.socket;
      socket.write('HTTP/1.1 200 OK\r\n');
      timers.push(setInterval(() => socket.write('X-Slow: 1\r\n'), 100));
    }, 800);
    const { message, ms } = await failure(r.byEndorsementKey(EK));
    expect(message).toMatch(/no answer within 800 ms/);
    expect(ms).toBeLessThan(2_000);
  });

  it('refuses a chunked answer larger than the limit, saying so', async () => {
    const r = await registry((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(16 * 1024, 0x20);
      for (let i = 0; i < 8; i++) res.write(chunk);
      res.end(JSON.stringify(INSTANCE));
    }, 2_000);
    const { message } = await failure(r.byEndorsementKey(EK));
    expect(message).toMatch(/answer larger than 65536 bytes/);
  });

  it('does not follow a redirect to another registry', async () => {
    const r = await registry((_req, res) => {
      res.writeHead(302, { location: 'http://127.0.0.1:1/instances' }).end();
    }, 2_000);
    const { message } = await failure(r.byEndorsementKey(EK));
    expect(message).toMatch(/answered HTTP 302/);
  });

  it('refuses an answer that is not JSON', async () => {
    const r = await registry((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' }).end('<html>login</html>');
    }, 2_000);
    const { message } = await failure(r.byEndorsementKey(EK));
    expect(message).toMatch(/not JSON/);
  });

  it('keeps answering when the registry closes every kept-alive connection after its answer', async () => {
    const r = await registry((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      // No "Connection: close": the client believes it may reuse the socket, the server drops it.
      res.end(JSON.stringify(INSTANCE), () => setTimeout(() => res.socket?.destroy(), 5));
    }, 2_000);
    for (let i = 0; i < 20; i++) {
      expect(await r.byEndorsementKey(EK)).toEqual({
        name: 'worker-1',
        role: 'worker',
        ips: ['10.0.0.1'],
        ekPublicKeyHash: EK,
      });
      // Lookups arrive as the registry closes the socket they would reuse.
      await new Promise((resolve) => setTimeout(resolve, i % 2 === 0 ? 5 : 6));
    }
  });
});
