import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { createTempDir } from '@constellation/testing';
import { describe, expect, it } from 'vitest';
import { joinStatusOf, recordJoinStatus } from './join-status.js';

const at = new Date('2026-11-23T08:00:00.000Z');

describe('join status', () => {
  it('records a refusal with the status name and the JoinService message, not the gRPC prefix', () => {
    const failure = Object.assign(new Error('7 PERMISSION_DENIED: attestation rejected: PCR 9'), {
      code: grpc.status.PERMISSION_DENIED,
      details: 'attestation rejected: PCR 9',
    });
    expect(joinStatusOf(2, 'request-ticket', failure, at)).toEqual({
      state: 'refused',
      step: 'request-ticket',
      attempts: 3,
      code: 'PERMISSION_DENIED',
      message: 'attestation rejected: PCR 9',
      at: at.toISOString(),
    });
  });

  it('tells an unreachable service from a refusal', () => {
    const down = Object.assign(new Error('14 UNAVAILABLE: connect ECONNREFUSED'), {
      code: grpc.status.UNAVAILABLE,
      details: 'connect ECONNREFUSED',
    });
    expect(joinStatusOf(0, 'request-ticket', down, at)).toMatchObject({ state: 'unreachable', code: 'UNAVAILABLE' });
    expect(joinStatusOf(0, 'request-ticket', new Error('timed out'), at)).toMatchObject({
      state: 'unreachable',
      message: 'timed out',
    });
    expect(joinStatusOf(4, 'check-ticket', undefined, at)).toEqual({
      state: 'ticket',
      step: 'check-ticket',
      attempts: 5,
      at: at.toISOString(),
    });
  });

  it('writes the file readable by operators, replacing the previous one', async () => {
    const dir = await createTempDir('join-status-');
    try {
      const path = join(dir.path, 'run', 'join-status.json');
      await recordJoinStatus(path, joinStatusOf(0, 'request-ticket', new Error('first'), at));
      await recordJoinStatus(path, joinStatusOf(1, 'check-ticket', undefined, at));
      expect(JSON.parse(await readFile(path, 'utf8'))).toMatchObject({ state: 'ticket', attempts: 2 });
      expect((await stat(path)).mode & 0o777).toBe(0o644);
    } finally {
      await dir.remove();
    }
  });
});
