// `constellation config measurements from-image`: reference values from a UKI, without booting it.
// The UKI here is assembled as the node image's is (objcopy on Debian's systemd-stub); that the
// values equal what firmware measures is shown by booting the real image (libs/machines' VM test).
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseAttestationFile } from '@constellation/attestation';
import { predictUkiBoot } from '@constellation/measured-boot';
import { runTypeScript, tempDirForTest } from '@constellation/testing';
import { describe, expect, it } from 'vitest';

const entry = new URL('./main.ts', import.meta.url).pathname;
const run = (...args: string[]) => runTypeScript(entry, args, { timeoutMs: 30_000 });
const STUB = '/usr/lib/systemd/boot/efi/linuxx64.efi.stub';

/** A UKI of the stub, with the stub itself as a stand-in kernel (MajorImageVersion 1, as Linux sets it). */
async function assembleUki(dir: string, cmdline: string): Promise<string> {
  const kernel = await readFile(STUB);
  kernel.writeUInt16LE(1, kernel.readUInt32LE(0x3c) + 24 + 44);
  const parts: [string, Uint8Array, number][] = [
    ['.osrel', Buffer.from('ID=debian\n'), 0x20000],
    ['.cmdline', Buffer.from(cmdline), 0x30000],
    ['.linux', kernel, 0x2000000],
    ['.initrd', Buffer.from('an initrd'), 0x3000000],
  ];
  const args: string[] = [];
  for (const [name, content, vma] of parts) {
    await writeFile(join(dir, `part${name}`), content);
    args.push(
      '--add-section',
      `${name}=${join(dir, `part${name}`)}`,
      '--change-section-vma',
      `${name}=0x${vma.toString(16)}`,
    );
  }
  const uki = join(dir, `uki-${cmdline.length}.efi`);
  await promisify(execFile)('objcopy', [...args, STUB, uki], { timeout: 30_000 });
  return uki;
}

describe('constellation config measurements from-image', () => {
  it('prints PCRs 4, 9, 11 and 15 with the digests each PCR may have, as the config and the JoinService read them', async () => {
    const dir = await tempDirForTest();
    const uki = await assembleUki(dir, 'console=ttyS0 constellation.verity.roothash=00');
    const json = await run('config', 'measurements', 'from-image', uki, '-o', 'json');
    expect(json.code, json.stderr).toBe(0);
    const { measurements, eventPolicy } = parseAttestationFile(json.stdout.toString(), 'from-image');
    const predicted = predictUkiBoot(await readFile(uki));
    expect([...measurements.keys()]).toEqual([4, 9, 11, 15]);
    for (const pcr of [4, 9, 11] as const) expect(measurements.get(pcr)?.expected).toEqual(predicted.pcrs[pcr].value);
    expect(eventPolicy?.pcrEventDigests?.['9']).toEqual(predicted.pcrs[9].events.map((e) => e.digest.toString('hex')));

    // The image directory `npm run node-image` prints works as well as the file, and the events read as a table.
    await writeFile(join(dir, 'uki.efi'), await readFile(uki));
    const events = await run('config', 'measurements', 'from-image', dir, '-o', 'events');
    expect(events.code, events.stderr).toBe(0);
    expect(events.stdout.toString()).toContain(`PCR 9 = ${predicted.pcrs[9].value.toString('hex')}`);
    expect(events.stdout.toString()).toContain('EV_EFI_BOOT_SERVICES_APPLICATION');
  }, 120_000);

  it('gives other values for another command line, and names what is wrong with a file that is no UKI', async () => {
    const dir = await tempDirForTest();
    const one = await run(
      'config',
      'measurements',
      'from-image',
      await assembleUki(dir, 'console=ttyS0'),
      '-o',
      'json',
    );
    const other = await run(
      'config',
      'measurements',
      'from-image',
      await assembleUki(dir, 'console=ttyS0 init=/bin/sh'),
      '-o',
      'json',
    );
    const pcrs = (out: Buffer) => parseAttestationFile(out.toString(), 'x').measurements;
    expect(pcrs(one.stdout).get(4)).not.toEqual(pcrs(other.stdout).get(4));
    expect(pcrs(one.stdout).get(9)).not.toEqual(pcrs(other.stdout).get(9));
    expect(pcrs(one.stdout).get(11)).not.toEqual(pcrs(other.stdout).get(11));

    await writeFile(join(dir, 'not-a-uki.efi'), 'MZ but nothing else');
    const refused = await run('config', 'measurements', 'from-image', join(dir, 'not-a-uki.efi'));
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`${join(dir, 'not-a-uki.efi')} is not a UKI this can predict:`);
    const missing = await run('config', 'measurements', 'from-image', join(dir, 'none'));
    expect(missing.stderr).toContain(`cannot read the image at ${join(dir, 'none')}`);
  }, 120_000);
});
