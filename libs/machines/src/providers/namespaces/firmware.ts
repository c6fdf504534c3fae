import { readFile, writeFile } from 'node:fs/promises';
import { bootComponentEvent, measureBoot } from '@constellation/attestation';
import type { BootComponent } from '@constellation/attestation';
import { EventLogWriter } from '@constellation/eventlog';
import type { EventTypeName } from '@constellation/eventlog';
import { SocketTransport, SwtpmControl, Tpm } from '@constellation/tpm';

/**
 * What a namespace machine's stand-in firmware measures at each power-on, and what its event log
 * says about it. A namespace node boots no firmware of its own, so the provider plays it: the
 * components are extended into the TPM and logged, as firmware and boot loader would. `logged`
 * lets a node's log differ from what was measured (an attacker's lying log); absent, the log
 * records exactly the extends.
 */
export interface Firmware {
  measured: BootComponent[];
  logged?: BootComponent[];
}

interface FirmwareFile {
  measured: SerialComponent[];
  logged?: SerialComponent[];
}

interface SerialComponent {
  pcr: number;
  description: string;
  digest: string;
  /** The component's own event (data in hex), so that every power-on logs what the first did. */
  event?: { type: EventTypeName; data: string };
}

const serialise = (components: readonly BootComponent[]): SerialComponent[] =>
  components.map((c) => ({
    pcr: c.pcr,
    description: c.description,
    digest: c.digest.toString('hex'),
    ...(c.event === undefined ? {} : { event: { type: c.event.type, data: c.event.data.toString('hex') } }),
  }));
const deserialise = (components: readonly SerialComponent[]): BootComponent[] =>
  components.map((c) => ({
    pcr: c.pcr,
    description: c.description,
    digest: Buffer.from(c.digest, 'hex'),
    ...(c.event === undefined ? {} : { event: { type: c.event.type, data: Buffer.from(c.event.data, 'hex') } }),
  }));

export async function writeFirmware(path: string, firmware: Firmware): Promise<void> {
  const file: FirmwareFile = {
    measured: serialise(firmware.measured),
    ...(firmware.logged === undefined ? {} : { logged: serialise(firmware.logged) }),
  };
  await writeFile(path, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o644 });
}

export async function readFirmware(path: string): Promise<Firmware> {
  const file = JSON.parse(await readFile(path, 'utf8')) as FirmwareFile;
  return {
    measured: deserialise(file.measured),
    ...(file.logged === undefined ? {} : { logged: deserialise(file.logged) }),
  };
}

/**
 * Power-on of the TPM and the measured boot: the TPM is reset (PCRs back to their reset values)
 * and started, the components are extended and the event log is written beside the extends.
 */
export async function powerOnTpm(tpmSocket: string, firmware: Firmware, eventLog: string): Promise<void> {
  await new SwtpmControl({ path: `${tpmSocket}.ctrl` }).reset();
  const tpm = new Tpm(new SocketTransport({ path: tpmSocket }));
  try {
    await tpm.startup();
    await measureBoot(tpm, firmware.measured, { eventLog });
  } finally {
    await tpm.close();
  }
  if (firmware.logged !== undefined) {
    const writer = new EventLogWriter({ banks: ['sha256'] });
    for (const component of firmware.logged) writer.append(bootComponentEvent(component));
    await writeFile(eventLog, writer.bytes());
  }
}
