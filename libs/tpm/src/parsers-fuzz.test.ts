import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseQuoteInfo } from './attest.js';
import { TpmParseError } from './errors.js';
import { TpmReader } from './marshal.js';
import { marshalPublic, parsePublic } from './public-area.js';
import { marshalSignature, parseSignature } from './signature.js';
import { akTemplate, ekTemplate } from './templates.js';

// A quote made by swtpm (ECDSA AK), captured once so the mutation tests need no TPM.
const QUOTE = Buffer.from(
  'ff54434780180022000b469015827b5846aafc79202ab6d3d397c66f7f22c78004ddfc829e3c77a05369002005050505' +
    '05050505050505050505050505050505050505050505050505050505000000000000001b000000010000000001201910' +
    '230016363600000001000b03010000002066687aadf862bd776c8fc18b8e9f8e20089714856ee233b3902a591d0d5f29' +
    '25',
  'hex',
);

/** Feeds `input` to `parse`: it must either return or throw a TpmParseError, never anything else. */
function expectTypedOutcome(parse: (b: Buffer) => unknown, input: Buffer): void {
  try {
    parse(input);
  } catch (err) {
    if (!(err instanceof TpmParseError))
      throw new Error(`untyped failure for ${input.toString('hex')}`, { cause: err });
  }
}

function mutate(input: Buffer): Buffer {
  const out = Buffer.from(input);
  const kind = Math.floor(Math.random() * 4);
  if (kind === 0 && out.length > 0) out[Math.floor(Math.random() * out.length)]! ^= 1 << Math.floor(Math.random() * 8);
  if (kind === 1) return out.subarray(0, Math.floor(Math.random() * out.length));
  if (kind === 2) return Buffer.concat([out, randomBytes(1 + Math.floor(Math.random() * 8))]);
  if (kind === 3 && out.length > 2)
    out.writeUInt16BE(Math.floor(Math.random() * 0x10000), Math.floor(Math.random() * (out.length - 1)));
  return out;
}

describe('TPM structure parsers under hostile input', () => {
  it('parse the captured quote', () => {
    const info = parseQuoteInfo(QUOTE);
    expect(info.extraData).toEqual(Buffer.alloc(32, 5));
    expect(info.pcrSelections).toEqual([{ hash: 'sha256', pcrs: [0] }]);
  });

  it('reject trailing bytes, truncation, wrong magic and wrong type with precise messages', () => {
    expect(() => parseQuoteInfo(Buffer.concat([QUOTE, Buffer.from([0])]))).toThrow(
      'TPMS_ATTEST: 1 unexpected trailing bytes',
    );
    expect(() => parseQuoteInfo(QUOTE.subarray(0, 60))).toThrow(/TPMS_ATTEST: truncated at extraData/);
    const magic = Buffer.from(QUOTE);
    magic[0] = 0x00;
    expect(() => parseQuoteInfo(magic)).toThrow(/not TPM_GENERATED_VALUE/);
    const type = Buffer.from(QUOTE);
    type.writeUInt16BE(0x8017, 4); // TPM_ST_ATTEST_CERTIFY
    expect(() => parseQuoteInfo(type)).toThrow(/not TPM_ST_ATTEST_QUOTE/);
    expect(() => parseQuoteInfo(Buffer.alloc(4096))).toThrow(/exceeds 1024/);
  });

  it('round-trip key templates and signatures through marshal and parse', () => {
    for (const template of [akTemplate('ecc'), akTemplate('rsa'), ekTemplate('ecc'), ekTemplate('rsa')]) {
      expect(parsePublic(marshalPublic(template))).toEqual(template);
    }
    const sig = { algorithm: 'ecdsa' as const, hash: 'sha256' as const, r: randomBytes(32), s: randomBytes(32) };
    expect(parseSignature(marshalSignature(sig))).toEqual(sig);
  });

  it('never crash or hang on random or mutated input: always a result or a TpmParseError', () => {
    const seeds = [
      QUOTE,
      marshalPublic(akTemplate('ecc')),
      marshalPublic(ekTemplate('rsa')),
      marshalSignature({ algorithm: 'rsassa', hash: 'sha256', signature: randomBytes(256) }),
    ];
    for (let i = 0; i < 3_000; i++) {
      const input = i % 4 === 0 ? randomBytes(Math.floor(Math.random() * 300)) : mutate(seeds[i % seeds.length]!);
      expectTypedOutcome(parseQuoteInfo, input);
      expectTypedOutcome(parsePublic, input);
      expectTypedOutcome(parseSignature, input);
    }
  });

  it('bounds-checks every read', () => {
    const r = new TpmReader(Buffer.from([0x00, 0x05, 0x01]), 'thing');
    expect(() => r.sized('field')).toThrow('thing: truncated at field (needs 5 bytes, 1 left)');
    expect(() => new TpmReader(Buffer.from([0x01, 0x00]), 'thing').sized('field', 16)).toThrow(
      'field has size 256, at most 16 allowed',
    );
  });
});
