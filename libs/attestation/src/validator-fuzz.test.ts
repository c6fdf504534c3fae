import { randomBytes } from 'node:crypto';
import { startSwtpm } from '@constellation/testing';
import { SocketTransport, Tpm } from '@constellation/tpm';
import { describe, expect, it } from 'vitest';
import { AttestationError } from './errors.js';
import { TpmIssuer } from './tpm-issuer.js';
import { TpmValidator } from './tpm-validator.js';

function mutate(input: Buffer): Buffer {
  const out = Buffer.from(input);
  switch (Math.floor(Math.random() * 5)) {
    case 0:
      out[Math.floor(Math.random() * out.length)]! ^= 1 << Math.floor(Math.random() * 8);
      return out;
    case 1:
      return out.subarray(0, Math.floor(Math.random() * out.length));
    case 2:
      return Buffer.concat([out, randomBytes(1 + Math.floor(Math.random() * 16))]);
    case 3: {
      const at = Math.floor(Math.random() * out.length);
      return Buffer.concat([out.subarray(0, at), randomBytes(1 + Math.floor(Math.random() * 4)), out.subarray(at)]);
    }
    default:
      for (let i = 0; i < 8; i++) out[Math.floor(Math.random() * out.length)] = Math.floor(Math.random() * 256);
      return out;
  }
}

describe('validator under random and mutated documents', () => {
  it('always answers with an AttestationError, never a crash, hang or acceptance', async () => {
    const swtpm = await startSwtpm();
    const tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port }));
    try {
      const nonce = randomBytes(32);
      const seed = await new TpmIssuer(tpm).issue(Buffer.from('user data'), nonce);
      const validator = new TpmValidator({ variant: 'qemu-vtpm', measurements: new Map() });
      const started = Date.now();
      let accepted = 0;
      for (let i = 0; i < 2_000; i++) {
        const input = i % 5 === 0 ? randomBytes(Math.floor(Math.random() * 2_000)) : mutate(seed);
        try {
          validator.validate(input, nonce);
          accepted++;
        } catch (err) {
          if (!(err instanceof AttestationError))
            throw new Error(`untyped failure for ${input.toString('hex')}`, { cause: err });
        }
      }
      // A mutation can land in a field the signature does not cover (e.g. unknown protobuf
      // fields or the unauthenticated event log) and still be valid; never more than a few.
      expect(accepted).toBeLessThan(200);
      expect(Date.now() - started).toBeLessThan(20_000);
    } finally {
      await tpm.close();
      await swtpm.stop();
    }
  });
});
