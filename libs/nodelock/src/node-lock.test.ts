import { randomBytes } from 'node:crypto';
import { markedPcr15 } from '@constellation/keys';
import { startSwtpm } from '@constellation/testing';
import type { Swtpm } from '@constellation/testing';
import { SocketTransport, Tpm } from '@constellation/tpm';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NodeLock, isNodeMarked } from './node-lock.js';

let swtpm: Swtpm;
let tpm: Tpm;

beforeEach(async () => {
  swtpm = await startSwtpm();
  tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port }));
});

afterEach(async () => {
  await tpm.close();
  await swtpm.stop();
});

describe('NodeLock on a real swtpm', () => {
  it('is taken exactly once among many concurrent contenders, and marks PCR 15 with the cluster ID', async () => {
    const lock = new NodeLock(tpm);
    const clusterId = randomBytes(32);
    expect(await isNodeMarked(tpm)).toBe(false);
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => lock.tryLock(clusterId, i === 0 ? 'join' : `init-${i}`)),
    );
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(lock.heldBy).toBe('join');
    expect((await tpm.pcrRead('sha256', [15])).get(15)).toEqual(markedPcr15(clusterId));
    expect(await isNodeMarked(tpm)).toBe(true);
    expect(await lock.tryLock(randomBytes(32), 'init')).toBe(false);
    expect((await tpm.pcrRead('sha256', [15])).get(15)).toEqual(markedPcr15(clusterId)); // a loser never extends
  });

  it('counts as taken even when marking fails, and reports the failure', async () => {
    const lock = new NodeLock(tpm);
    await tpm.close();
    await swtpm.stop();
    await expect(lock.tryLock(randomBytes(32), 'init')).rejects.toThrow();
    expect(lock.heldBy).toBe('init');
    expect(await lock.tryLock(randomBytes(32), 'join')).toBe(false);
    swtpm = await startSwtpm();
    tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port }));
  });
});
