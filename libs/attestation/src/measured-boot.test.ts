import { createHash } from 'node:crypto';
import { startSwtpm } from '@constellation/testing';
import { SocketTransport, Tpm } from '@constellation/tpm';
import { describe, expect, it } from 'vitest';
import { componentDigest, expectedMeasurements, initialPcrValue, measureBoot, replayEvents } from './measured-boot.js';

describe('measured boot', () => {
  it('predicts exactly the PCR values a real TPM ends up with', async () => {
    const swtpm = await startSwtpm();
    const tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port }));
    try {
      const components = [
        { pcr: 4, description: 'kernel', digest: componentDigest('vmlinuz') },
        { pcr: 4, description: 'initrd', digest: componentDigest('initrd') },
        { pcr: 9, description: 'bootstrapper bundle', digest: componentDigest('bundle') },
        { pcr: 23, description: 'application', digest: componentDigest('app') },
      ];
      const events = await measureBoot(tpm, components);
      expect(events.map((e) => e.description)).toEqual(['kernel', 'initrd', 'bootstrapper bundle', 'application']);
      const pcrs = [0, 4, 9, 15, 17, 23];
      const predicted = expectedMeasurements(components, pcrs);
      const actual = await tpm.pcrRead('sha256', pcrs);
      for (const pcr of pcrs) expect(actual.get(pcr), `PCR ${pcr}`).toEqual(predicted.get(pcr)?.expected);
    } finally {
      await tpm.close();
      await swtpm.stop();
    }
  });

  it('refuses to extend PCRs reserved for higher localities, as the TPM does', async () => {
    const swtpm = await startSwtpm();
    const tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port }));
    try {
      await expect(measureBoot(tpm, [{ pcr: 17, description: 'drtm', digest: componentDigest('x') }])).rejects.toThrow(
        /TPM_RC_LOCALITY/,
      );
    } finally {
      await tpm.close();
      await swtpm.stop();
    }
  });

  it('replays extends as SHA-256(old || digest) from the reset values', () => {
    const d = componentDigest('x');
    const once = createHash('sha256').update(Buffer.alloc(32)).update(d).digest();
    expect(replayEvents([{ pcr: 4, digest: d }], [4]).get(4)).toEqual(once);
    expect(initialPcrValue(18)).toEqual(Buffer.alloc(32, 0xff));
    expect(() => expectedMeasurements([], [24])).toThrow(/out of range/);
  });
});
