import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { MemoryLogger } from '@constellation/logger/testing';
import { tempDirForTest } from '@constellation/testing';
import { describe, expect, it } from 'vitest';
import { MeasurementsSource } from './measurements-source.js';

/*
 * Attack (issue 42, item 3): a hand-edited join configuration whose measurements hold only PCR 15
 * (or whose boot PCRs are all warnOnly). The CLI refused such a set, the JoinService's loader did
 * not: with it, any boot chain on a genuine TPM was admitted. Loading and live reloading now obey
 * the same rule as the CLI (checkMeasurementPolicy in @constellation/attestation). Issue 50: a set
 * enforcing only PCRs no boot measures (16 and 23 are resettable by any process) is refused too.
 */

const ZERO = '0'.repeat(64);
const KERNEL = 'a'.repeat(64);

const onlyPcr15 = JSON.stringify({ measurements: { '15': { expected: ZERO } } });
const bootWarnOnly = JSON.stringify({
  measurements: { '4': { expected: KERNEL, warnOnly: true }, '15': { expected: ZERO } },
});
const genuine = JSON.stringify({ measurements: { '4': { expected: KERNEL }, '15': { expected: ZERO } } });

async function source(text: string): Promise<{ source: MeasurementsSource; path: string; failures: Error[] }> {
  const path = join(await tempDirForTest(), 'measurements.json');
  await writeFile(path, text);
  const failures: Error[] = [];
  const measurements = new MeasurementsSource({
    path,
    logger: new MemoryLogger(),
    pollIntervalMs: 60_000,
    onFailed: (err) => failures.push(err),
  });
  return { source: measurements, path, failures };
}

describe('the JoinService refuses measurements that enforce no boot measurement', () => {
  it('does not start with only PCR 15, nor with every boot PCR warnOnly', async () => {
    const bare = await source(onlyPcr15);
    await expect(bare.source.start()).rejects.toThrow(
      `${bare.path}: the measurements enforce no boot measurement (only PCR 15): any software on a genuine TPM would pass`,
    );
    bare.source.stop();
    const warned = await source(bootWarnOnly);
    await expect(warned.source.start()).rejects.toThrow(
      `${warned.path}: the measurements enforce no boot measurement (PCR 4 is warnOnly)`,
    );
    warned.source.stop();
  });

  // Issue 50, item 4: PCR 23 (and 16) any process resets at locality 0 and extends as it likes.
  it('does not start with only a PCR no boot measures enforced (PCR 23)', async () => {
    const resettable = await source(
      JSON.stringify({ measurements: { '23': { expected: ZERO }, '15': { expected: ZERO } } }),
    );
    await expect(resettable.source.start()).rejects.toThrow(
      `${resettable.path}: the measurements enforce no boot measurement (PCR 23 is enforced, but no boot measures it`,
    );
    resettable.source.stop();
  });

  it('keeps the last good measurements when a reload brings only PCR 15, and says why', async () => {
    const live = await source(genuine);
    await live.source.start();
    try {
      await writeFile(live.path, onlyPcr15);
      await live.source.reload();
      expect(live.failures.map((err) => err.message)).toEqual([
        `${live.path}: the measurements enforce no boot measurement (only PCR 15): any software on a genuine TPM would pass; enforce the PCRs the node image measures (for example 4 and 9) with warnOnly: false`,
      ]);
      expect([...live.source.current().keys()]).toEqual([4, 15]);
      expect(live.source.loadedGeneration).toBe(1);
    } finally {
      live.source.stop();
    }
  });
});
