// `constellation config fetch-measurements`: the attacks first (a changed file, another signer, a
// relayed old file under another name), each refused with the reason and the config unchanged;
// then a genuine file, from a path and over HTTP, written into the config with its comments kept.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createMeasurementsSigningKey, signMeasurements } from '@constellation/attestation';
import { runTypeScript, startHttpServer, tempDirForTest } from '@constellation/testing';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';

const entry = new URL('./main.ts', import.meta.url).pathname;
const pcr = (byte: number): string => Buffer.alloc(32, byte).toString('hex');
const measurements = (pcr11: number): Buffer =>
  Buffer.from(
    `${JSON.stringify(
      {
        measurements: {
          '4': { expected: pcr(4), warnOnly: false },
          '9': { expected: pcr(9), warnOnly: false },
          '11': { expected: pcr(pcr11), warnOnly: false },
          '15': { expected: pcr(0), warnOnly: false },
        },
        eventPolicy: { pcrEventDigests: { '4': [pcr(40)] } },
      },
      null,
      2,
    )}\n`,
  );

async function workspace(): Promise<{ dir: string; run: (...args: string[]) => ReturnType<typeof runTypeScript> }> {
  const dir = await tempDirForTest();
  const run = (...args: string[]) => runTypeScript(entry, ['--workspace', dir, ...args], { timeoutMs: 30_000 });
  const generated = await run('config', 'generate');
  expect(generated.code, generated.stderr).toBe(0);
  return { dir, run };
}

describe('constellation config fetch-measurements', () => {
  const release = createMeasurementsSigningKey();

  it('refuses a changed file or a foreign signature with the reason, and leaves the config as it was', async () => {
    const { dir, run } = await workspace();
    const config = join(dir, 'constellation-conf.yaml');
    const before = await readFile(config, 'utf8');
    const key = join(dir, 'release.pub');
    await writeFile(key, release.publicKey);
    const file = join(dir, 'measurements.json');
    await writeFile(file, measurements(11));
    await writeFile(`${file}.sig`, signMeasurements(measurements(12), release.privateKey));
    const changed = await run('config', 'fetch-measurements', '--url', file, '--public-key', key);
    expect(changed.code).toBe(1);
    expect(changed.stderr).toContain(
      `refused: ${file}'s signature does not verify against the pinned public key: the file was changed, or signed with another key; ${config} is unchanged`,
    );
    await writeFile(`${file}.sig`, signMeasurements(measurements(11), createMeasurementsSigningKey().privateKey));
    const foreign = await run('config', 'fetch-measurements', '--url', file, '--public-key', key);
    expect(foreign.code).toBe(1);
    expect(foreign.stderr).toContain('does not verify against the pinned public key');
    const missing = await run('config', 'fetch-measurements', '--url', join(dir, 'none.json'), '--public-key', key);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(`cannot read the measurements at ${join(dir, 'none.json')}`);
    const scheme = await run('config', 'fetch-measurements', '--url', 'ftp://x/m.json', '--public-key', key);
    expect(scheme.stderr).toContain("ftp://x/m.json is neither an http(s) URL nor a file's path");
    expect(await readFile(config, 'utf8')).toBe(before);
  }, 120_000);

  it('writes a genuine file into the config, from a path and over HTTP, keeping its comments', async () => {
    const { dir, run } = await workspace();
    const config = join(dir, 'constellation-conf.yaml');
    const key = join(dir, 'release.pub');
    await writeFile(key, release.publicKey);
    const file = join(dir, 'measurements.json');
    await writeFile(file, measurements(11));
    await writeFile(`${file}.sig`, signMeasurements(measurements(11), release.privateKey));
    const fromPath = await run('config', 'fetch-measurements', '--url', file, '--public-key', key);
    expect(fromPath.code, fromPath.stderr).toBe(0);
    expect(fromPath.stderr).toMatch(
      /measurements for PCRs 4, 9, 11, 15 and the event policy written to the config \(signed by sha256:[0-9a-f]{64}\)/,
    );
    const written = await readFile(config, 'utf8');
    expect(written).toContain('# '); // the generated comments are still there
    const parsed = parse(written) as {
      attestation: { measurements: Record<string, { expected: string }>; eventPolicy: unknown };
    };
    expect(parsed.attestation.measurements['11']?.expected).toBe(pcr(11));
    expect(parsed.attestation.eventPolicy).toEqual({ pcrEventDigests: { '4': [pcr(40)] } });

    const served = new Map([
      ['/v2/measurements.json', measurements(13)],
      ['/v2/measurements.json.sig', Buffer.from(signMeasurements(measurements(13), release.privateKey))],
    ]);
    const server = await startHttpServer((request, response) => {
      const body = served.get(request.url ?? '');
      response.writeHead(body === undefined ? 404 : 200).end(body);
    });
    try {
      const overHttp = await run(
        'config',
        'fetch-measurements',
        '--url',
        `${server.url}/v2/measurements.json`,
        '--public-key',
        key,
      );
      expect(overHttp.code, overHttp.stderr).toBe(0);
      const again = parse(await readFile(config, 'utf8')) as {
        attestation: { measurements: Record<string, { expected: string }> };
      };
      expect(again.attestation.measurements['11']?.expected).toBe(pcr(13));
      const absent = await run(
        'config',
        'fetch-measurements',
        '--url',
        `${server.url}/v3/measurements.json`,
        '--public-key',
        key,
      );
      expect(absent.stderr).toContain(
        `cannot fetch the measurements from ${server.url}/v3/measurements.json: HTTP 404`,
      );
    } finally {
      await server.close();
    }
  }, 120_000);
});
