import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { componentDigest, expectedMeasurements } from '@constellation/attestation';
import type { BootComponent } from '@constellation/attestation';
import { cString, extendsPcr, parseEventLog, separatorData } from '@constellation/eventlog';
import { startUnixSwtpm, tempDirForTest } from '@constellation/testing';
import { SocketTransport, Tpm } from '@constellation/tpm';
import { describe, expect, it } from 'vitest';
import { powerOnTpm, readFirmware, writeFirmware } from './firmware.js';

// Components with their own events (as imageBootComponents gives for a node image) next to ones
// without: firmware.json keeps the events, and every power-on of a real swtpm measures and logs
// the same.

const components: BootComponent[] = [
  {
    pcr: 4,
    description: 'boot manager',
    digest: componentDigest('Calling EFI Application from Boot Option'),
    event: { type: 'EV_EFI_ACTION', data: Buffer.from('Calling EFI Application from Boot Option', 'latin1') },
  },
  {
    pcr: 4,
    description: 'separator',
    digest: componentDigest(separatorData()),
    event: { type: 'EV_SEPARATOR', data: separatorData() },
  },
  {
    pcr: 4,
    description: 'kernel',
    digest: componentDigest('a kernel'),
    event: { type: 'EV_EFI_BOOT_SERVICES_APPLICATION', data: Buffer.alloc(0) },
  },
  { pcr: 9, description: 'bootstrapper', digest: componentDigest('a bootstrapper') },
  {
    pcr: 11,
    description: 'section name .linux',
    digest: componentDigest('.linux\0'),
    event: { type: 'EV_IPL', data: Buffer.from('.linux\0', 'utf16le') },
  },
];

describe('the stand-in firmware', () => {
  it("keeps components' own events in firmware.json, and every power-on measures and logs the same", async () => {
    const dir = await tempDirForTest('firmware-');
    const path = join(dir, 'firmware.json');
    await writeFirmware(path, { measured: components });
    const file = JSON.parse(await readFile(path, 'utf8')) as { measured: { event?: unknown }[] };
    expect(file.measured[1]?.event).toEqual({ type: 'EV_SEPARATOR', data: '00000000' });
    expect(file.measured[3]).not.toHaveProperty('event');
    const firmware = await readFirmware(path);
    expect(firmware).toEqual({ measured: components });

    const swtpm = await startUnixSwtpm();
    const eventLog = join(dir, 'binary_bios_measurements');
    const pcrs = [4, 9, 11];
    const expected = new Map([...expectedMeasurements(components, pcrs)].map(([pcr, m]) => [pcr, m.expected]));
    try {
      const logs: Buffer[] = [];
      for (let boot = 0; boot < 2; boot++) {
        await powerOnTpm(swtpm.dataSocket, firmware, eventLog);
        const tpm = new Tpm(new SocketTransport({ path: swtpm.dataSocket }));
        try {
          expect(await tpm.pcrRead('sha256', pcrs), `boot ${boot}`).toEqual(expected);
        } finally {
          await tpm.close();
        }
        logs.push(await readFile(eventLog));
      }
      expect(logs[1]).toEqual(logs[0]);
      const events = parseEventLog(logs[0] ?? Buffer.alloc(0)).events.filter(extendsPcr);
      expect(events.map((e) => [e.pcr, e.typeName, e.data])).toEqual([
        [4, 'EV_EFI_ACTION', Buffer.from('Calling EFI Application from Boot Option', 'latin1')],
        [4, 'EV_SEPARATOR', separatorData()],
        [4, 'EV_EFI_BOOT_SERVICES_APPLICATION', Buffer.alloc(0)],
        [9, 'EV_IPL', cString('bootstrapper')],
        [11, 'EV_IPL', Buffer.from('.linux\0', 'utf16le')],
      ]);
    } finally {
      await swtpm.stop();
    }
  });
});
