import * as grpc from '@grpc/grpc-js';
import { AttestedChannelCredentials, AttestedTlsServer } from '@constellation/atls';
import { DummyIssuer, DummyValidator } from '@constellation/attestation/testing';
import { hashInitSecret } from '@constellation/keys';
import { MemoryLogger } from '@constellation/logger/testing';
import { InitServiceClient, InitServiceService, createGrpcServer, grpcMessageLimits } from '@constellation/proto';
import type { InitResponse } from '@constellation/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initRequest } from './node.fixture.js';
import type { NodeContext } from './node-context.js';
import { SECRET_CHECK_RETRY_AFTER_MS } from './init-admission.js';
import { initService } from './init-service.js';
import { RecentLog } from './recent-log.js';

/*
 * Attacker 3 (a stranger with network access, no init secret), found by a red-team pass: the
 * InitServer ran the init-secret check (a metadata fetch and a memory-hard scrypt, 16 MiB and
 * tens of ms each) for every Init call, with no bound on how many ran at once; the "one Init at a
 * time" check comes after it. One aTLS connection (one quote) buys any number of HTTP/2 streams,
 * so one stranger queued hundreds of scrypt runs on libuv's four-thread pool, and the operator's
 * own Init (and the node's file writes and aTLS key generation, which share that pool) waited
 * behind them.
 */

const SECRET = Buffer.from('the-operators-init-secret');
let hash: string;
let fetches = 0;
let server: grpc.Server;
let atls: AttestedTlsServer;
let port: number;

beforeAll(async () => {
  // mini's cost (log2N 14): the only hash the product writes today.
  hash = await hashInitSecret(SECRET, { log2N: 14, r: 8, p: 1 });
  const notHere = (): Promise<never> => Promise.reject(new Error('not in this test'));
  const context = {
    logger: new MemoryLogger(),
    recentLog: new RecentLog(),
    lock: { heldBy: undefined },
    metadata: {
      initSecretHash: () => {
        fetches++;
        return Promise.resolve(hash);
      },
      self: notHere,
      endpoint: notHere,
    },
  } as unknown as NodeContext;
  server = createGrpcServer();
  server.addService(
    InitServiceService,
    initService(context, { committed: () => undefined, finished: () => undefined }),
  );
  atls = new AttestedTlsServer(server, { issuer: new DummyIssuer() });
  port = await atls.listen(0, '127.0.0.1');
}, 60_000);

afterAll(async () => {
  await atls.close(100);
  server.forceShutdown();
});

function client(): InitServiceClient {
  const credentials = new AttestedChannelCredentials([new DummyValidator()]);
  return new InitServiceClient(`127.0.0.1:${port}`, credentials.credentials, {
    ...credentials.channelOptions,
    ...grpcMessageLimits,
  });
}

/** One Init call: resolves with the time of its first message or its error, and the error. */
function init(c: InitServiceClient, secret: Buffer): Promise<{ ms: number; error?: grpc.ServiceError }> {
  const started = Date.now();
  return new Promise((resolve) => {
    const stream = c.init(initRequest({ initSecret: secret }), { deadline: Date.now() + 120_000 });
    let done = false;
    stream.on('data', (_m: InitResponse) => {
      if (!done) {
        done = true;
        resolve({ ms: Date.now() - started });
      }
    });
    stream.on('error', (error: grpc.ServiceError) => {
      if (!done) {
        done = true;
        resolve({ ms: Date.now() - started, error });
      }
    });
    stream.on('end', () => undefined);
  });
}

describe('a stranger floods the InitServer with wrong init secrets (attacker 3)', () => {
  it("bounds the init-secret checks a stranger can run at once, so the operator's Init is not queued behind them", async () => {
    const stranger = client();
    const operator = client();
    try {
      await new Promise<void>((resolve, reject) => {
        stranger.waitForReady(Date.now() + 20_000, (err) => {
          if (err) reject(err);
          else resolve();
        });
      });
      await new Promise<void>((resolve, reject) => {
        operator.waitForReady(Date.now() + 20_000, (err) => {
          if (err) reject(err);
          else resolve();
        });
      });
      // Idle: how long the operator's own check takes.
      const idle = await init(operator, Buffer.from('not yet: a wrong secret to time the check'));
      fetches = 0;
      // 200 wrong-secret calls on ONE attested connection, then the operator's right one.
      const flood = Array.from({ length: 200 }, () => init(stranger, Buffer.from('guess')));
      await new Promise((resolve) => setTimeout(resolve, 50));
      const mine = await init(operator, SECRET);
      const strangers = await Promise.all(flood);
      const checked = strangers.filter((r) => r.error?.code === grpc.status.PERMISSION_DENIED).length;
      process.stdout.write(
        `idle check ${idle.ms} ms; with the flood: operator's check ${mine.ms} ms; ` +
          `strangers' calls that ran scrypt: ${checked}/200; init-secret hash fetches: ${fetches}\n`,
      );
      // One check at a time per connection; the rest refused at once, without fetching the hash or
      // running scrypt, told when to come back (as the RecoveryService does).
      expect(fetches).toBeLessThanOrEqual(3);
      const busy = strangers.filter((r) => r.error?.code === grpc.status.UNAVAILABLE);
      expect(busy.length).toBeGreaterThanOrEqual(197);
      expect(busy[0]?.error?.details).toBe('this connection already has an init-secret check under way; one at a time');
      expect(busy[0]?.error?.metadata.get('retry-after-ms')).toEqual([String(SECRET_CHECK_RETRY_AFTER_MS)]);
      expect(mine.error).toBeUndefined();
      // And the operator's own check is not queued behind the stranger's.
      expect(mine.ms).toBeLessThan(idle.ms + 2_000);
    } finally {
      stranger.close();
      operator.close();
    }
  }, 120_000);
});
