import { randomBytes } from 'node:crypto';
import { connect } from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import { DummyIssuer } from '@constellation/attestation/testing';
import type { Issuer } from '@constellation/attestation';
import { waitFor, withTimeout } from '@constellation/testing';
import { describe, expect, it } from 'vitest';
import { AttestationLimits } from './attestation-limits.js';
import { AttestedTlsServer } from './attested-tls-server.js';
import { nonceToServerName } from './nonce-server-name.js';

describe('bounded work for strangers on attested endpoints', () => {
  it('counts in-flight attestations in the process and per peer', () => {
    const limits = new AttestationLimits({ maxConcurrent: 3, perPeer: 2 });
    expect(limits.take('10.0.0.1')).toBeUndefined();
    expect(limits.take('10.0.0.1')).toBeUndefined();
    expect(limits.take('10.0.0.1')).toBe('10.0.0.1 already has 2 attestations in flight');
    expect(limits.saturated('10.0.0.1')).toBe(true);
    expect(limits.take('10.0.0.2')).toBeUndefined();
    expect(limits.take('10.0.0.3')).toBe('3 attestations are in flight; try again shortly');
    limits.release('10.0.0.1');
    expect(limits.saturated('10.0.0.1')).toBe(false);
    expect(limits.take('10.0.0.1')).toBeUndefined();
  });

  it('refuses ClientHellos beyond the bound at once, without attesting them (found on main: each cost a key and a quote)', async () => {
    // An issuer that holds every attestation until released, like a TPM busy with a queue.
    const dummy = new DummyIssuer();
    let started = 0;
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const slow: Issuer = {
      variant: dummy.variant,
      issue: async (userData, nonce) => {
        started++;
        await gate;
        return dummy.issue(userData, nonce);
      },
    };
    const server = new grpc.Server();
    const atls = new AttestedTlsServer(server, {
      issuer: slow,
      limits: new AttestationLimits({ maxConcurrent: 8, perPeer: 2 }),
    });
    const port = await atls.listen(0, '127.0.0.1');
    const hello = (): Promise<'attested' | 'refused'> =>
      new Promise((resolve) => {
        const socket = connect({
          host: '127.0.0.1',
          port,
          servername: nonceToServerName(randomBytes(32)),
          rejectUnauthorized: false,
          ALPNProtocols: ['h2'],
        });
        socket.once('secureConnect', () => {
          socket.destroy();
          resolve('attested');
        });
        socket.once('error', () => {
          socket.destroy();
          resolve('refused');
        });
      });
    try {
      const first = [hello(), hello()];
      await waitFor(() => started === 2, { timeoutMs: 5_000, description: 'two attestations in flight' });
      // The same peer is at its bound: further hellos are refused at once, no attestation started.
      const more = await withTimeout(Promise.all(Array.from({ length: 10 }, hello)), 5_000, 'refusals');
      expect(more).toEqual(Array.from({ length: 10 }, () => 'refused'));
      expect(started).toBe(2);
      release();
      expect(await withTimeout(Promise.all(first), 5_000, 'the two in flight')).toEqual(['attested', 'attested']);
      // Slots are released: the peer can attest again.
      expect(await withTimeout(hello(), 5_000, 'after release')).toBe('attested');
    } finally {
      release();
      await atls.close(100);
      server.forceShutdown();
    }
  });
});
