import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { noopLogger } from '@constellation/logger';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MeasurementsSource } from './measurements-source.js';

// The JoinService's join-config key attestationConfig carries the policy on boot events beside
// the measurements: loaded, reloaded and refused together, so the two never disagree.

const MEASUREMENTS = {
  '9': { expected: 'ab'.repeat(32), warnOnly: false },
  '15': { expected: '00'.repeat(32), warnOnly: false },
};

let dir: string;
let source: MeasurementsSource | undefined;
const failures: string[] = [];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'event-policy-source-'));
  failures.length = 0;
});

afterEach(async () => {
  source?.stop();
  await rm(dir, { recursive: true, force: true });
});

async function start(content: unknown): Promise<MeasurementsSource> {
  const path = join(dir, 'attestationConfig');
  await writeFile(path, JSON.stringify(content));
  source = new MeasurementsSource({
    path,
    logger: noopLogger,
    pollIntervalMs: 60_000,
    onFailed: (err) => failures.push(err.message),
  });
  await source.start();
  return source;
}

describe('the event policy in the attestation config', () => {
  it('is loaded with the measurements and reloaded with them', async () => {
    const loaded = await start({ measurements: MEASUREMENTS, eventPolicy: { secureBoot: 'enabled' } });
    expect(loaded.currentEventPolicy()).toEqual({ secureBoot: 'enabled' });
    await writeFile(
      join(dir, 'attestationConfig'),
      JSON.stringify({ measurements: MEASUREMENTS, eventPolicy: { pcrEventDigests: { '9': ['cd'.repeat(32)] } } }),
    );
    await loaded.reload();
    expect(loaded.currentEventPolicy()).toEqual({ pcrEventDigests: { '9': ['cd'.repeat(32)] } });
    await writeFile(join(dir, 'attestationConfig'), JSON.stringify({ measurements: MEASUREMENTS }));
    await loaded.reload();
    expect(loaded.currentEventPolicy()).toBeUndefined();
  });

  it('keeps the last good policy and measurements when a reload brings a bad rule, and says which', async () => {
    const loaded = await start({ measurements: MEASUREMENTS, eventPolicy: { secureBoot: 'enabled' } });
    await writeFile(
      join(dir, 'attestationConfig'),
      JSON.stringify({ measurements: MEASUREMENTS, eventPolicy: { secureBoot: 'disabled' } }),
    );
    await loaded.reload();
    expect(failures).toEqual([expect.stringContaining('eventPolicy.secureBoot: expected "enabled"')]);
    expect(loaded.currentEventPolicy()).toEqual({ secureBoot: 'enabled' });
    expect(loaded.loadedGeneration).toBe(1);
  });

  it('refuses to start with an unknown rule, naming it', async () => {
    await expect(start({ measurements: MEASUREMENTS, eventPolicy: { secureboot: 'enabled' } })).rejects.toThrow(
      'eventPolicy.secureboot: unknown rule',
    );
    source = undefined;
  });
});
