import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runCommand, tempDirForTest } from '@constellation/testing';
import { describe, expect, it } from 'vitest';
import { certificateToPem, createCertificate, readCertificateFields } from './certificate.js';
import { decodeOid, oid } from '@constellation/der';
import { ATLS_ROOT_NAME, atlsPublicRoot } from './public-root.js';

function leaf(extensionValue: Buffer): { der: Buffer; spki: Buffer } {
  const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const der = createCertificate({
    subjectKey: publicKey,
    subjectName: 'constellation attested node',
    signerKey: atlsPublicRoot().privateKey,
    issuerName: ATLS_ROOT_NAME,
    extensions: [{ oid: '1.3.9900.5.1', critical: false, value: extensionValue }],
  });
  return { der, spki: publicKey.export({ type: 'spki', format: 'der' }) };
}

describe('aTLS certificates', () => {
  it('are valid X.509 that openssl parses and verifies against the public root', async () => {
    const dir = await tempDirForTest();
    const { der } = leaf(randomBytes(2000));
    await writeFile(join(dir, 'leaf.pem'), certificateToPem(der));
    await writeFile(join(dir, 'root.pem'), atlsPublicRoot().certificatePem);
    const text = await runCommand('openssl', ['x509', '-in', join(dir, 'leaf.pem'), '-noout', '-text'], {
      timeoutMs: 10_000,
    });
    expect(text.code).toBe(0);
    expect(text.stdout.toString()).toContain('1.3.9900.5.1');
    expect(text.stdout.toString()).toContain('Not After : Dec 31 23:59:59 9999 GMT');
    const verify = await runCommand('openssl', ['verify', '-CAfile', join(dir, 'root.pem'), join(dir, 'leaf.pem')], {
      timeoutMs: 10_000,
    });
    expect(verify.stdout.toString().trim()).toBe(`${join(dir, 'leaf.pem')}: OK`);
  });

  it('give back the exact SPKI and extension they were made with', () => {
    const value = randomBytes(300);
    const { der, spki } = leaf(value);
    const fields = readCertificateFields(der);
    expect(fields.spki).toEqual(spki);
    expect(fields.extensions).toEqual([{ oid: '1.3.9900.5.1', critical: false, value }]);
  });

  it('derive the same public root key in every process', () => {
    const point = atlsPublicRoot().publicKey.export({ format: 'jwk' });
    expect(point).toMatchObject({ kty: 'EC', crv: 'P-256' });
    // Pinned: changing the label or derivation would split old and new CLIs from nodes.
    expect(point.x).toBe('3xJI7KN0ivbwGn02riV3QzapAOYZQh3hpm5OtscGxxw');
  });

  it('encode and decode object identifiers', () => {
    for (const id of ['1.3.9900.5.1', '2.5.29.19', '1.2.840.10045.4.3.2', '2.999.1']) {
      expect(decodeOid(oid(id).subarray(2))).toBe(id);
    }
  });

  it('reject malformed certificates with an error, never a crash or hang', () => {
    const { der } = leaf(randomBytes(100));
    for (let i = 0; i < 2_000; i++) {
      const input = Buffer.from(der);
      if (i % 3 === 0) input[Math.floor(Math.random() * input.length)] = Math.floor(Math.random() * 256);
      const mutated =
        i % 3 === 1
          ? input.subarray(0, Math.floor(Math.random() * input.length))
          : i % 3 === 2
            ? randomBytes(Math.floor(Math.random() * 600))
            : input;
      try {
        readCertificateFields(mutated);
      } catch (err) {
        expect(err).toBeInstanceOf(Error);
      }
    }
  });
});
