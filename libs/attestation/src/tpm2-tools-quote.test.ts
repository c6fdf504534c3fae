import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runChecked, startSwtpm, tempDirForTest } from '@constellation/testing';
import type { Swtpm } from '@constellation/testing';
import { SocketTransport, Tpm } from '@constellation/tpm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkAttestationKey } from './attestation-key.js';
import { quoteExtraData } from './binding.js';
import { encodeDocument } from './document.js';
import { componentDigest, expectedMeasurements, measureBoot } from './measured-boot.js';
import type { BootComponent } from './measured-boot.js';
import { TpmValidator } from './tpm-validator.js';

const components: BootComponent[] = [{ pcr: 9, description: 'bootstrapper bundle', digest: componentDigest('bundle') }];

let swtpm: Swtpm;

beforeAll(async () => {
  swtpm = await startSwtpm();
  const tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port }));
  await measureBoot(tpm, components);
  await tpm.close();
});

afterAll(async () => {
  await swtpm.stop();
});

/** Runs a tpm2-tools command against the swtpm, flushing transient objects afterwards (swtpm has no resource manager). */
async function tool(program: string, args: string[], cwd: string): Promise<string> {
  const out = await runChecked(program, args, { timeoutMs: 20_000, env: swtpm.toolEnv, cwd });
  await runChecked('tpm2_flushcontext', ['-t'], { timeoutMs: 10_000, env: swtpm.toolEnv, cwd });
  return out.stdout.toString();
}

/** Our AK template's attributes, as tpm2-tools spells them (see akTemplate in @constellation/tpm). */
const AK_TEMPLATE_ATTRIBUTES = 'fixedtpm|fixedparent|sensitivedataorigin|userwithauth|noda|restricted|sign';

describe('quotes made by tpm2-tools', () => {
  for (const [algorithm, keyAlgorithm] of [
    ['ecc', 'ecc256:ecdsa-sha256:null'],
    ['rsa', 'rsa2048:rsassa-sha256:null'],
  ] as const) {
    it(`verify with our validator (${algorithm} AK from our template by tpm2_createprimary, quote from tpm2_quote)`, async () => {
      const dir = await tempDirForTest();
      const userData = Buffer.from('tls public key hash');
      const nonce = randomBytes(32);
      await tool(
        'tpm2_createprimary',
        ['-C', 'e', '-G', keyAlgorithm, '-g', 'sha256', '-a', AK_TEMPLATE_ATTRIBUTES, '-c', 'ak.ctx', '-o', 'ak.pem'],
        dir,
      );
      await tool('tpm2_readpublic', ['-c', 'ak.ctx', '-o', 'ak.pub'], dir);
      const pcrList = 'sha256:4,9,15';
      const out = await tool(
        'tpm2_quote',
        [
          '-c',
          'ak.ctx',
          '-l',
          pcrList,
          '-q',
          quoteExtraData(userData, nonce).toString('hex'),
          '-m',
          'quote.msg',
          '-s',
          'quote.sig',
          '-o',
          'quote.pcrs',
          '-g',
          'sha256',
        ],
        dir,
      );
      // tpm2_quote prints the PCR values it quoted: "    9 : 0x<hex>".
      const pcrs = [...out.matchAll(/^\s+(\d+)\s*:\s*0x([0-9A-Fa-f]{64})$/gm)].map((m) => ({
        index: Number(m[1]),
        value: Buffer.from(m[2] ?? '', 'hex'),
      }));
      expect(pcrs.map((p) => p.index)).toEqual([4, 9, 15]);
      const akPublic = (await readFile(join(dir, 'ak.pub'))).subarray(2); // TPM2B_PUBLIC: drop the size
      const document = encodeDocument({
        variant: 'qemu-vtpm',
        akPublic,
        quotes: [
          { attest: await readFile(join(dir, 'quote.msg')), signature: await readFile(join(dir, 'quote.sig')), pcrs },
        ],
        userData,
        eventLog: [],
        tcgEventLog: Buffer.alloc(0),
      });
      const validator = new TpmValidator({
        variant: 'qemu-vtpm',
        measurements: expectedMeasurements(components, [4, 9, 15]),
      });
      const result = validator.validate(document, nonce, userData);
      expect(result.pcrs.get(9)).toEqual(expectedMeasurements(components, [9]).get(9)?.expected);
      expect(() => validator.validate(document, randomBytes(32))).toThrow(/not bound to this nonce/);
    });
  }

  it("refuses tpm2_createak's AK: its attributes are not our template's (no noDA)", async () => {
    const dir = await tempDirForTest();
    await tool('tpm2_createek', ['-c', 'ek.ctx', '-G', 'ecc', '-u', 'ek.pub'], dir);
    await tool(
      'tpm2_createak',
      ['-C', 'ek.ctx', '-c', 'ak.ctx', '-G', 'ecc', '-g', 'sha256', '-s', 'ecdsa', '-u', 'ak.pub'],
      dir,
    );
    const akPublic = (await readFile(join(dir, 'ak.pub'))).subarray(2);
    expect(() => checkAttestationKey(akPublic)).toThrow(
      'attestation key is not our AK template apart from its key: attributes differ from the AK template: noDA missing',
    );
  });
});
