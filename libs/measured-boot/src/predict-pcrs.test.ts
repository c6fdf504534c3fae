import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { tempDirForTest } from '@constellation/testing';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BOOT_PHASES, extendBootPhases } from './boot-phases.js';
import { UkiError } from './errors.js';
import { readPeImage } from './pe-image.js';
import { predictUkiBoot } from './predict-pcrs.js';
import type { UkiBootPrediction } from './predict-pcrs.js';
import {
  buildUki,
  dumpSection,
  pesignDigest,
  readStub,
  standInKernel,
  systemdMeasurePcr11,
} from './test-images.fixture.js';
import type { BuiltUki, UkiParts } from './test-images.fixture.js';

// Each PCR is recomputed here from scratch with node:crypto, from what independent tools say the
// image holds (objcopy's section dumps, pesign's Authenticode digests), and PCR 11 is also checked
// against systemd's own precalculator, systemd-measure.

const sha256 = (...parts: Uint8Array[]): Buffer => {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part);
  return hash.digest();
};
const replay = (digests: readonly Uint8Array[]): string =>
  digests.reduce<Buffer>((pcr, digest) => sha256(pcr, digest), Buffer.alloc(32)).toString('hex');
const hex = (pcr: { value: Buffer }): string => pcr.value.toString('hex');

async function exampleUki(dir: string, parts: Partial<UkiParts> = {}): Promise<BuiltUki> {
  const stub = await readStub();
  return buildUki(dir, {
    linux: standInKernel(stub),
    osrel: Buffer.from('PRETTY_NAME="Constellation node"\nID=debian\nVERSION_ID=12\n'),
    cmdline: Buffer.from('console=ttyS0 root=/dev/vda2 ro quiet\n'),
    initrd: Buffer.alloc(70_000, 0xa5),
    ...parts,
  });
}

/** PCR 11 as systemd-stub 252 extends it, from objcopy's dump of each section. */
async function goldenPcr11(dir: string, uki: BuiltUki, names: readonly string[]): Promise<string> {
  const digests: Buffer[] = [];
  for (const name of names) {
    digests.push(sha256(Buffer.from(`${name}\0`, 'ascii')), sha256(await dumpSection(dir, uki.path, name)));
  }
  return replay(digests);
}

function partPath(uki: BuiltUki, name: string): string {
  const path = uki.partPaths.get(name);
  if (path === undefined) throw new Error(`no part file for ${name}`);
  return path;
}

describe('predictUkiBoot', () => {
  it('predicts PCR 11 as objcopy dumps the sections and as systemd-measure computes it, boot phases included', async () => {
    const dir = await tempDirForTest('measured-boot-');
    const uki = await exampleUki(dir);
    const prediction = predictUkiBoot(uki.bytes);
    const names = ['.linux', '.osrel', '.cmdline', '.initrd'];
    expect(hex(prediction.pcrs[11])).toBe(await goldenPcr11(dir, uki, names));
    expect(prediction.pcrs[11].events.map((e) => [e.type, e.measuredBy])).toEqual(
      names.flatMap(() => [
        ['EV_IPL', 'systemd-stub'],
        ['EV_IPL', 'systemd-stub'],
      ]),
    );
    expect(prediction.pcrs[11].events[0]?.eventData).toEqual(Buffer.from('.linux\0', 'utf16le'));

    const paths = ['enter-initrd', 'enter-initrd:leave-initrd', BOOT_PHASES.join(':')];
    const measured = await systemdMeasurePcr11(Object.fromEntries(names.map((n) => [n, partPath(uki, n)])), [
      ':',
      ...paths,
    ]);
    expect(hex(prediction.pcrs[11])).toBe(measured.get(':'));
    for (const path of paths) {
      expect(hex(extendBootPhases(prediction.pcrs[11], path.split(':'))), path).toBe(measured.get(path));
    }
  });

  it('predicts PCR 9 from the command line the stub passes and the initrd', async () => {
    const dir = await tempDirForTest('measured-boot-');
    const uki = await exampleUki(dir);
    const prediction = predictUkiBoot(uki.bytes);
    // systemd-stub chops the trailing newline; the kernel measures UTF-16LE plus a UTF-16 NUL.
    const cmdline = (await readFile(partPath(uki, '.cmdline'), 'utf8')).trimEnd();
    expect(prediction.kernelCommandLine).toBe(cmdline);
    const loadOptions = Buffer.concat([Buffer.from(cmdline, 'utf16le'), Buffer.alloc(2)]);
    const initrd = await readFile(partPath(uki, '.initrd'));
    expect(hex(prediction.pcrs[9])).toBe(replay([sha256(loadOptions), sha256(initrd)]));
    expect(prediction.pcrs[9].events.map((e) => [e.type, e.measuredBy])).toEqual([
      ['EV_EVENT_TAG', 'linux-efi-stub'],
      ['EV_EVENT_TAG', 'linux-efi-stub'],
    ]);
  });

  it('predicts PCR 4 from pesign’s digests of the UKI and the kernel, without the kernel under Secure Boot', async () => {
    const dir = await tempDirForTest('measured-boot-');
    const uki = await exampleUki(dir);
    const action = sha256(Buffer.from('Calling EFI Application from Boot Option', 'ascii'));
    const separator = sha256(Buffer.alloc(4));
    const ukiDigest = Buffer.from(await pesignDigest(uki.path), 'hex');
    const kernelDigest = Buffer.from(await pesignDigest(partPath(uki, '.linux')), 'hex');

    const prediction = predictUkiBoot(uki.bytes);
    expect(hex(prediction.pcrs[4])).toBe(replay([action, separator, ukiDigest, kernelDigest]));
    expect(prediction.pcrs[4].events.map((e) => e.type)).toEqual([
      'EV_EFI_ACTION',
      'EV_SEPARATOR',
      'EV_EFI_BOOT_SERVICES_APPLICATION',
      'EV_EFI_BOOT_SERVICES_APPLICATION',
    ]);
    const secureBoot = predictUkiBoot(uki.bytes, { secureBoot: true });
    expect(hex(secureBoot.pcrs[4])).toBe(replay([action, separator, ukiDigest]));
    expect(secureBoot.pcrs[9]).toEqual(prediction.pcrs[9]);
    expect(secureBoot.pcrs[11]).toEqual(prediction.pcrs[11]);
  });

  it('measures a section’s zero fill when VirtualSize exceeds its raw data', async () => {
    const dir = await tempDirForTest('measured-boot-');
    const uki = await exampleUki(dir, { initrd: Buffer.alloc(1000, 0x11) });
    const image = readPeImage(uki.bytes);
    const initrd = image.sections.find((s) => s.name === '.initrd');
    if (initrd === undefined) throw new Error('no .initrd');
    const grown = Buffer.from(uki.bytes);
    grown.writeUInt32LE(initrd.sizeOfRawData + 0x800, initrd.headerOffset + 8);
    grown.writeUInt32LE(initrd.virtualAddress + initrd.sizeOfRawData + 0x800, image.optionalHeaderOffset + 56);
    const expected = sha256(
      Buffer.alloc(1000, 0x11),
      Buffer.alloc(initrd.sizeOfRawData - 1000), // objcopy's padding to FileAlignment
      Buffer.alloc(0x800), // the loader's zero fill
    );
    const prediction = predictUkiBoot(grown);
    expect(prediction.pcrs[9].events[1]?.digest).toEqual(expected);
    expect(prediction.pcrs[11].events[7]?.digest).toEqual(expected);
  });

  it('has no PCR 9 events without .cmdline and .initrd', async () => {
    const dir = await tempDirForTest('measured-boot-');
    const stub = await readStub();
    const uki = await buildUki(dir, { linux: standInKernel(stub) });
    const prediction = predictUkiBoot(uki.bytes);
    expect(prediction.pcrs[9]).toEqual({ pcr: 9, value: Buffer.alloc(32), events: [] });
    expect(prediction.kernelCommandLine).toBeUndefined();
    expect(prediction.pcrs[11].events).toHaveLength(2);
  });

  it('refuses UKIs whose boot it does not model', async () => {
    const dir = await tempDirForTest('measured-boot-');
    const stub = await readStub();
    const refusal = (bytes: Uint8Array): UkiError => {
      try {
        predictUkiBoot(bytes);
      } catch (err) {
        expect(err).toBeInstanceOf(UkiError);
        return err as UkiError;
      }
      throw new Error('predicted');
    };
    // The stub as its own kernel: MajorImageVersion 0 means the legacy EFI handover protocol.
    const old = await buildUki(dir, { linux: stub });
    expect(refusal(old.bytes).message).toMatch(/MajorImageVersion 0/);
    const notPe = await buildUki(dir, { linux: Buffer.from('not a kernel') });
    expect(refusal(notPe.bytes).cause).toBeDefined();
    const blank = await buildUki(dir, { linux: standInKernel(stub), cmdline: Buffer.from(' \n') });
    expect(refusal(blank.bytes).section).toBe('.cmdline');
    const withKey = await buildUki(dir, {
      linux: standInKernel(stub),
      extra: [['.pcrpkey', Buffer.from('-----BEGIN PUBLIC KEY-----\n'), 0x40000]],
    });
    expect(refusal(withKey.bytes).section).toBe('.pcrpkey');
    const driver = Buffer.from((await exampleUki(dir)).bytes);
    driver.writeUInt16LE(11, readPeImage(driver).optionalHeaderOffset + 68);
    expect(refusal(driver).message).toMatch(/Subsystem 11/);
  });

  it('predicts every UKI the same way twice, and as the golden computation does', async () => {
    const dir = await tempDirForTest('measured-boot-');
    const stub = await readStub();
    const kernel = standInKernel(stub);
    const printable = fc
      .string({ minLength: 1, maxLength: 60 })
      .filter((s) => /[^\s\0\x7f]/u.test(s.replace(/\0.*$/su, '')));
    await fc.assert(
      fc.asyncProperty(printable, fc.uint8Array({ minLength: 1, maxLength: 3000 }), async (cmdline, initrd) => {
        const uki = await buildUki(dir, { linux: kernel, cmdline: Buffer.from(cmdline), initrd });
        const first: UkiBootPrediction = predictUkiBoot(uki.bytes);
        expect(predictUkiBoot(Buffer.from(uki.bytes))).toEqual(first);
        expect(hex(first.pcrs[11])).toBe(await goldenPcr11(dir, uki, ['.linux', '.cmdline', '.initrd']));
        expect(first.pcrs[9].events[1]?.digest).toEqual(sha256(initrd));
      }),
      { numRuns: 12, seed: 0x5eed },
    );
  });
});
