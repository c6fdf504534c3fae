import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TpmIssuer, componentDigest, expectedMeasurements, measureBoot } from '@constellation/attestation';
import {
  EFI_GLOBAL_VARIABLE_GUID,
  EventLogWriter,
  appendEventLog,
  separatorData,
  uefiVariableData,
} from '@constellation/eventlog';
import type { BootComponent } from '@constellation/attestation';
import { startSwtpm, useTestEkCa } from '@constellation/testing';
import { SocketTransport, Tpm } from '@constellation/tpm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attestedWorkspace } from './attested-workspace.fixture.js';
import { eventLines } from './eventlog-report.js';
import { recordingInitNode } from './recording-init-node.fixture.js';
import { verifyNode } from './verify-command.js';

// `constellation verify` on a node that sends its event log: a PCR that does not match is shown
// with the events that extended it, from a log whose replay equals the quote.

const BOOT: BootComponent[] = [
  { pcr: 4, description: 'kernel', digest: componentDigest('kernel v1') },
  { pcr: 9, description: 'bootstrapper bundle', digest: componentDigest('bundle v2 (not the image)') },
];
const IMAGE: BootComponent[] = [BOOT[0]!, { ...BOOT[1]!, digest: componentDigest('bundle v1') }];
const ekCa = useTestEkCa();
let tpm: Tpm;
let stop: () => Promise<void>;
let issuer: TpmIssuer;
let log: Buffer;
let dir: string;

beforeAll(async () => {
  const swtpm = await startSwtpm({ manufacture: { ca: ekCa(), vmid: 'verify-event-log' } });
  stop = () => swtpm.stop();
  tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port, keepConnection: true }));
  dir = await mkdtemp(join(tmpdir(), 'verify-event-log-'));
  const logPath = join(dir, 'boot', 'binary_bios_measurements');
  await measureBoot(tpm, BOOT, { eventLog: logPath });
  log = await readFile(logPath);
  issuer = await TpmIssuer.rooted(tpm, { tcgEventLog: () => log });
}, 60_000);

afterAll(async () => {
  await tpm.close();
  await stop();
  await rm(dir, { recursive: true, force: true });
});

describe('constellation verify with the node event log', () => {
  it('shows, for the PCR that does not match, the events that extended it', async () => {
    const node = await recordingInitNode(issuer);
    try {
      const workspace = await attestedWorkspace({
        port: node.port,
        measurements: expectedMeasurements(IMAGE, [4, 9, 15]),
        ekCa: ekCa(),
      });
      const report = await verifyNode(workspace, `127.0.0.1:${node.port}`);
      expect(report.eventLogEvents).toBe(3);
      expect(report.pcrs.map((p) => [p.pcr, p.matches, p.events?.map((e) => [e.index, e.type, e.sha256])])).toEqual([
        [4, true, undefined],
        [9, false, [[2, 'EV_IPL', BOOT[1]!.digest.toString('hex')]]],
        [15, true, undefined],
      ]);
      const shown = report.pcrs[1]!.events!.flatMap((e) => eventLines(e.event));
      expect(shown).toEqual([
        '#2  PCR 9  EV_IPL  (20 bytes of data)',
        `    sha256 ${BOOT[1]!.digest.toString('hex')}`,
        '    untrusted, not confirmed by the digests: text "bootstrapper bundle"',
      ]);
      expect(report.eventPolicyViolations).toEqual([]);
    } finally {
      await node.close();
    }
  });

  it('refuses to vouch for events in a PCR the quote leaves out (issue 50, item 3)', async () => {
    // The node quotes PCRs 4, 9 and 15 only, and its log invents the firmware's Secure Boot events
    // in PCR 7: nothing binds them, yet they satisfy the rule read on their own.
    const invented = new EventLogWriter({ banks: ['sha256'] });
    invented.append({
      pcr: 7,
      type: 'EV_EFI_VARIABLE_DRIVER_CONFIG',
      data: uefiVariableData(EFI_GLOBAL_VARIABLE_GUID, 'SecureBoot', Buffer.from([1])),
    });
    invented.append({ pcr: 7, type: 'EV_SEPARATOR', data: separatorData() });
    const withPcr7 = appendEventLog(log, invented.bytes()).bytes;
    const partial = await TpmIssuer.rooted(tpm, { tcgEventLog: () => withPcr7, pcrs: [4, 9, 15] });
    const node = await recordingInitNode(partial);
    try {
      const workspace = await attestedWorkspace({
        port: node.port,
        measurements: expectedMeasurements(BOOT, [4, 9, 15]),
        eventPolicy: { secureBoot: 'enabled' },
        ekCa: ekCa(),
      });
      const report = await verifyNode(workspace, `127.0.0.1:${node.port}`);
      expect(report.pcrs.every((p) => p.matches)).toBe(true);
      expect(report.eventPolicyViolations).toEqual([
        'the event log extends PCR 7, which the quote does not cover: those events cannot be checked against the event policy',
      ]);
    } finally {
      await node.close();
    }
  });
});
