import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseMeasurements } from '@constellation/attestation';
import { repoRoot, runTypeScript, tempDirForTest } from '@constellation/testing';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';

const entry = new URL('./main.ts', import.meta.url).pathname;
const run = (...args: string[]) => runTypeScript(entry, args, { timeoutMs: 30_000 });
// Real logs from real machines (README there), with the PCR values their replay must give.
const logs = join(repoRoot(), 'testdata', 'eventlogs');
const expected = JSON.parse(await readFile(join(logs, 'expected-pcrs.json'), 'utf8')) as Record<
  string,
  { pcrs: Record<string, Record<string, string>> }
>;

describe('constellation eventlog', () => {
  it('-o json prints every real log replayed to the values of expected-pcrs.json', async () => {
    for (const [name, { pcrs }] of Object.entries(expected)) {
      const result = await run('eventlog', join(logs, name), '-o', 'json');
      expect(result.code, `${name}: ${result.stderr}`).toBe(0);
      const json = JSON.parse(result.stdout.toString()) as {
        pcrs: Record<string, Record<string, string>>;
        events: {
          index: number;
          pcr: number;
          typeName: string;
          digests: Record<string, string>;
          data: { untrusted: boolean };
        }[];
      };
      for (const [bank, values] of Object.entries(pcrs)) expect(json.pcrs[bank], `${name} ${bank}`).toEqual(values);
      expect(json.events.length).toBeGreaterThan(20);
      expect(json.events.every((e) => e.data.untrusted)).toBe(true);
    }
  }, 180_000);

  it('prints events with decoded details marked untrusted, and the replayed PCRs per bank', async () => {
    const result = await run('eventlog', join(logs, 'rhel8-uefi.bin'));
    expect(result.code).toBe(0);
    const text = result.stdout.toString();
    expect(text).toContain('crypto-agile (TCG spec 2.0 errata 0) event log, 83 events, banks sha1, sha256, sha384');
    expect(text).toContain('#3  PCR 7  EV_EFI_VARIABLE_DRIVER_CONFIG');
    expect(text).toMatch(
      /untrusted, hashes to its digests: variable "SecureBoot" \(8be4df61-93ca-11d2-aa0d-00e098032b8c, Secure Boot's SecureBoot\), 1 bytes; Secure Boot enabled/,
    );
    expect(text).toContain(
      'device path "PciRoot(0x0)/Pci(0x3,0x0)/Scsi(0x1,0x0)/HD(1,GPT,ef72374c-2630-46a1-88d6-082693781140,0x800,0x64000)/\\\\EFI\\\\redhat\\\\shimx64.efi"',
    );
    expect(text).toContain('untrusted, hashes to its digests: GRUB command "set pager=1"');
    expect(text).toContain(
      'kernel command line (grub) "(hd0,gpt2)/boot/vmlinuz-4.18.0-240.22.1.el8_3.x86_64 root=UUID=',
    );
    expect(text).toContain(`Replayed PCRs\n  sha1\n     0  ${expected['rhel8-uefi.bin']!.pcrs.sha1!['0']}`);
    expect(text).toContain(`  sha384\n     0  `);
  });

  it('refuses bad input naming the file and the reason', async () => {
    const dir = await tempDirForTest('eventlog-cli-');
    const missing = await run('eventlog', join(dir, 'nothing.bin'));
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(`cannot read the event log ${join(dir, 'nothing.bin')}: ENOENT`);
    const truncated = join(dir, 'truncated.bin');
    await writeFile(truncated, (await readFile(join(logs, 'rhel8-uefi.bin'))).subarray(0, 100));
    const cut = await run('eventlog', truncated);
    expect(cut.code).toBe(1);
    expect(cut.stderr).toContain(
      `${truncated}: event log: event 1 at offset 87: truncated: the sha1 digest needs 20 bytes, 13 left in the log\n`,
    );
    const huge = join(dir, 'huge.bin');
    await writeFile(huge, Buffer.alloc(2 * 1024 * 1024));
    const big = await run('eventlog', huge);
    expect(big.code).toBe(2);
    expect(big.stderr).toContain(`${huge} is larger than 1048576 bytes, the event log size limit`);
    const format = await run('eventlog', truncated, '-o', 'xml');
    expect(format.code).toBe(2);
    expect(format.stderr).toContain("argument 'xml' is invalid");
    const help = await run('eventlog', '--help');
    expect(help.stdout.toString()).toContain('marked untrusted');
    expect(help.stdout.toString()).toContain('Examples:');
  }, 120_000);
});

describe('constellation config measurements from-eventlog', () => {
  it('generates measurements the config accepts and the event policy of the known-good boot', async () => {
    const result = await run(
      'config',
      'measurements',
      'from-eventlog',
      join(logs, 'rhel8-uefi.bin'),
      '--pcrs',
      '4,7,8,9',
    );
    expect(result.code, result.stderr).toBe(0);
    const values = parse(result.stdout.toString()) as {
      measurements: Record<string, { expected: string }>;
      eventPolicy: { secureBoot?: string; kernelCommandLines?: string[]; bootApplications?: string[] };
    };
    const sha256 = expected['rhel8-uefi.bin']!.pcrs.sha256!;
    expect(Object.keys(values.measurements)).toEqual(['4', '7', '8', '9', '15']);
    expect(values.measurements['7']?.expected).toBe(sha256['7']);
    const measurements = parseMeasurements(JSON.stringify({ measurements: values.measurements }));
    expect(measurements.get(4)?.expected.toString('hex')).toBe(sha256['4']);
    expect(values.eventPolicy.secureBoot).toBe('enabled');
    expect(values.eventPolicy.kernelCommandLines?.[0]).toContain('root=UUID=f3948fb4-cce7-4193-940a-c50052e93bf3');
    expect(values.eventPolicy.bootApplications).toHaveLength(3);

    const json = await run(
      'config',
      'measurements',
      'from-eventlog',
      join(logs, 'ubuntu-2104-no-secure-boot.bin'),
      '-o',
      'json',
    );
    expect(json.code).toBe(0);
    const all = JSON.parse(json.stdout.toString()) as {
      measurements: Record<string, unknown>;
      eventPolicy: Record<string, unknown>;
    };
    expect(Object.keys(all.measurements)).toEqual(['0', '1', '2', '3', '4', '5', '6', '7', '8', '9', '14', '15']);
    expect(all.eventPolicy.secureBoot).toBeUndefined();
  }, 120_000);

  it('refuses a SHA-1-only log, PCR 15 and PCRs the log does not extend', async () => {
    const sha1 = await run('config', 'measurements', 'from-eventlog', join(logs, 'debian-10.bin'));
    expect(sha1.code).toBe(2);
    expect(sha1.stderr).toContain('the log has no SHA-256 bank (it has sha1)');
    const pcr15 = await run('config', 'measurements', 'from-eventlog', join(logs, 'rhel8-uefi.bin'), '--pcrs', '4,15');
    expect(pcr15.code).toBe(2);
    expect(pcr15.stderr).toContain('PCR 15 is the cluster-ID PCR');
    const absent = await run('config', 'measurements', 'from-eventlog', join(logs, 'rhel8-uefi.bin'), '--pcrs', '12');
    expect(absent.stderr).toContain('--pcrs: the log has no event for PCR 12');
    const bad = await run('config', 'measurements', 'from-eventlog', join(logs, 'rhel8-uefi.bin'), '--pcrs', '4,x');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--pcrs: expected PCR indexes from 0 to 23 separated by commas, got "x"');
  }, 120_000);
});
