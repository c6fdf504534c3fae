import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { measureBoot } from '@constellation/attestation';
import { checkEventPolicy, extendsPcr, parseEventLog, replayEventLog } from '@constellation/eventlog';
import { startSwtpm, tempDirForTest } from '@constellation/testing';
import { SocketTransport, Tpm } from '@constellation/tpm';
import { describe, expect, it } from 'vitest';
import { imageBootComponents } from './image-boot-components.js';
import { predictUkiBoot } from './predict-pcrs.js';
import type { PredictUkiBootOptions } from './predict-pcrs.js';
import { IMAGE_PCRS, imageReferenceValues } from './reference-values.js';
import { buildUki, readStub, standInKernel } from './test-images.fixture.js';

// The components are extended into a real swtpm and logged by the same code as mini's namespace
// nodes' stand-in firmware; the TPM's PCRs and the written log are then held against the UKI's
// reference values, as the JoinService would hold a node booting the image.

async function exampleUki(dir: string): Promise<Buffer> {
  const stub = await readStub();
  const uki = await buildUki(dir, {
    linux: standInKernel(stub),
    osrel: Buffer.from('PRETTY_NAME="Constellation node"\nID=debian\nVERSION_ID=12\n'),
    cmdline: Buffer.from('console=ttyS0 root=/dev/vda2 ro quiet\n'),
    initrd: Buffer.alloc(70_000, 0xa5),
  });
  return uki.bytes;
}

async function bootIntoSwtpm(uki: Buffer, dir: string, options: PredictUkiBootOptions): Promise<void> {
  const reference = imageReferenceValues(uki, options);
  const components = imageBootComponents(uki, options);
  const eventLog = join(dir, 'binary_bios_measurements');
  const swtpm = await startSwtpm();
  const tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port }));
  let quoted: Map<number, Buffer>;
  try {
    await measureBoot(tpm, components, { eventLog });
    quoted = await tpm.pcrRead('sha256', [...IMAGE_PCRS]);
  } finally {
    await tpm.close();
    await swtpm.stop();
  }
  for (const pcr of IMAGE_PCRS) {
    expect(quoted.get(pcr)?.toString('hex'), `PCR ${pcr} in the TPM`).toBe(reference.measurements.get(pcr));
  }

  const log = parseEventLog(await readFile(eventLog));
  const replayed = replayEventLog(log).get('sha256');
  for (const pcr of IMAGE_PCRS) {
    expect(replayed?.get(pcr)?.toString('hex'), `PCR ${pcr} replayed from the log`).toBe(
      reference.measurements.get(pcr),
    );
  }
  const events = log.events.filter(extendsPcr);
  for (const predicted of reference.pcrs) {
    const logged = events.filter((e) => e.pcr === predicted.pcr);
    expect(
      logged.map((e) => [e.typeName, e.digests.get('sha256')?.toString('hex'), e.data.toString('hex')]),
      `PCR ${predicted.pcr}'s events`,
    ).toEqual(
      predicted.events.map((e) => [e.type, e.digest.toString('hex'), (e.eventData ?? Buffer.alloc(0)).toString('hex')]),
    );
  }
  // One event policy for nodes that boot the image and for those that play it.
  expect(checkEventPolicy(log, { pcrEventDigests: reference.pcrEventDigests })).toEqual([]);
}

describe('imageBootComponents', () => {
  it('makes a real TPM and the written event log show the PCRs and events of booting the UKI', async () => {
    const dir = await tempDirForTest('image-boot-components-');
    const uki = await exampleUki(dir);
    await bootIntoSwtpm(uki, dir, {});

    const components = imageBootComponents(uki);
    const pcr4 = components.filter((c) => c.pcr === 4).map((c) => c.event?.type);
    expect(pcr4).toEqual([
      'EV_EFI_ACTION',
      'EV_SEPARATOR',
      'EV_EFI_BOOT_SERVICES_APPLICATION',
      'EV_EFI_BOOT_SERVICES_APPLICATION',
    ]);
    expect(components.filter((c) => c.pcr === 9).map((c) => c.event?.type)).toEqual(['EV_EVENT_TAG', 'EV_EVENT_TAG']);
    // As a real boot extends them: the UKI is loaded, systemd-stub measures its sections, then
    // loads the kernel, whose EFI stub measures the command line and initrd.
    const prediction = predictUkiBoot(uki);
    const [action, separator, ukiImage, kernelImage] = prediction.pcrs[4].events;
    expect(components.map((c) => c.digest)).toEqual(
      [action, separator, ukiImage, ...prediction.pcrs[11].events, kernelImage, ...prediction.pcrs[9].events].map(
        (e) => e?.digest,
      ),
    );
    expect(components.map((c) => c.description)).toContain(ukiImage?.description);
  });

  it('leaves out the kernel image event with Secure Boot on, as systemd-stub does', async () => {
    const dir = await tempDirForTest('image-boot-components-');
    const uki = await exampleUki(dir);
    await bootIntoSwtpm(uki, dir, { secureBoot: true });
    expect(imageBootComponents(uki, { secureBoot: true }).filter((c) => c.pcr === 4)).toHaveLength(3);
  });
});
