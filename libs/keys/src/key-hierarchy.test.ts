import { createHmac, randomBytes } from 'node:crypto';
import { startSwtpm } from '@constellation/testing';
import { SocketTransport, Tpm } from '@constellation/tpm';
import { describe, expect, it } from 'vitest';
import {
  deriveClusterId,
  deriveDataKey,
  deriveMeasurementSecret,
  deriveStateDiskKey,
  markedPcr15,
} from './key-hierarchy.js';

/** RFC 5869 HKDF written out with HMAC, independent of node:crypto's hkdf. */
function referenceHkdf(ikm: Buffer, salt: Buffer, info: string | Buffer, length: number): Buffer {
  const prk = createHmac('sha256', salt).update(ikm).digest();
  const blocks: Buffer[] = [];
  let previous = Buffer.alloc(0);
  for (let i = 1; blocks.length * 32 < length; i++) {
    previous = createHmac('sha256', prk)
      .update(Buffer.concat([previous, typeof info === 'string' ? Buffer.from(info) : info, Buffer.from([i])]))
      .digest();
    blocks.push(previous);
  }
  return Buffer.concat(blocks).subarray(0, length);
}

describe('key hierarchy', () => {
  it('matches RFC 5869 HKDF-SHA256 test case 1 through the reference implementation', () => {
    const okm = referenceHkdf(
      Buffer.alloc(22, 0x0b),
      Buffer.from('000102030405060708090a0b0c', 'hex'),
      Buffer.from('f0f1f2f3f4f5f6f7f8f9', 'hex'),
      42,
    );
    expect(okm.toString('hex')).toBe(
      '3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865',
    );
  });

  it('derives data keys, the measurement secret, the cluster ID and disk keys as HKDF with "key-" info', () => {
    const master = randomBytes(32);
    const salt = randomBytes(32);
    const measurementSalt = randomBytes(32);
    const secret = deriveMeasurementSecret(master, salt);
    expect(secret).toEqual(referenceHkdf(master, salt, 'key-measurementSecret', 32));
    expect(deriveClusterId(secret, measurementSalt)).toEqual(
      referenceHkdf(secret, measurementSalt, 'key-clusterID', 32),
    );
    expect(deriveStateDiskKey(master, salt, 'AB12CD34-0000-4000-8000-00000000000F')).toEqual(
      referenceHkdf(master, salt, 'key-ab12cd34-0000-4000-8000-00000000000f', 32),
    );
    expect(deriveDataKey(master, salt, 'ca_emergency_ssh', 16)).toEqual(
      referenceHkdf(master, salt, 'key-ca_emergency_ssh', 16),
    );
  });

  it('is reproducible and separates clusters', () => {
    const master = randomBytes(32);
    const salt = randomBytes(32);
    expect(deriveMeasurementSecret(master, salt)).toEqual(
      deriveMeasurementSecret(Buffer.from(master), Buffer.from(salt)),
    );
    expect(deriveMeasurementSecret(master, salt)).not.toEqual(deriveMeasurementSecret(randomBytes(32), salt));
  });

  it('rejects empty ids and things that are not disk UUIDs', () => {
    expect(() => deriveDataKey(Buffer.alloc(32), Buffer.alloc(32), '')).toThrow(/must not be empty/);
    expect(() => deriveStateDiskKey(Buffer.alloc(32), Buffer.alloc(32), '../../etc')).toThrow(/not a disk UUID/);
  });

  it("binds a disk key to its machine's EK: the same UUID under another EK is another key", () => {
    const [master, salt] = [Buffer.alloc(32, 1), Buffer.alloc(32, 2)];
    const uuid = 'ab12cd34-0000-4000-8000-00000000000f';
    const a = deriveStateDiskKey(master, salt, uuid, 'a'.repeat(64));
    expect(a).toEqual(deriveDataKey(master, salt, `${uuid}@${'a'.repeat(64)}`));
    expect(a).not.toEqual(deriveStateDiskKey(master, salt, uuid, 'b'.repeat(64)));
    expect(a).not.toEqual(deriveStateDiskKey(master, salt, uuid));
    expect(() => deriveStateDiskKey(master, salt, uuid, 'A'.repeat(64))).toThrow(/not a lower-case hex SHA-256/);
  });

  it('predicts PCR 15 exactly as a real TPM computes it after PCR_Event with the cluster ID', async () => {
    const swtpm = await startSwtpm();
    const tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port }));
    try {
      const clusterId = randomBytes(32);
      await tpm.pcrEvent(15, clusterId);
      expect((await tpm.pcrRead('sha256', [15])).get(15)).toEqual(markedPcr15(clusterId));
    } finally {
      await tpm.close();
      await swtpm.stop();
    }
  });
});
