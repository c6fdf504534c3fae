import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventLogWriter, cString, parseEventLog, replayEventLog } from '@constellation/eventlog';
import { repoRoot, startSwtpm } from '@constellation/testing';
import type { Swtpm } from '@constellation/testing';
import { SocketTransport, Tpm } from '@constellation/tpm';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openNodeEventLog } from './node-event-log.js';
import { NodeLock } from './node-lock.js';

let swtpm: Swtpm;
let tpm: Tpm;
let dir: string;
const lines: string[] = [];
const logger = {
  info: (message: string, fields: Record<string, unknown>) => lines.push(`info ${message} ${JSON.stringify(fields)}`),
  warn: (message: string, fields: Record<string, unknown>) => lines.push(`warn ${message} ${JSON.stringify(fields)}`),
};

beforeEach(async () => {
  swtpm = await startSwtpm();
  tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port }));
  dir = await mkdtemp(join(tmpdir(), 'node-event-log-'));
  lines.length = 0;
});

afterEach(async () => {
  await tpm.close();
  await swtpm.stop();
  await rm(dir, { recursive: true, force: true });
});

const open = (bootLog: string) =>
  openNodeEventLog({ bootLog, runtimeLog: join(dir, 'runtime.log'), tpm, maxBytes: 64 * 1024, logger });

describe("the node's event log: the boot log with the bootstrapper's events appended", () => {
  it('explains every PCR the boot and the bootstrapper extended', async () => {
    // A measured boot of a kernel (PCR 4) and a bootstrapper (PCR 9), in the SHA-256 bank.
    const boot = new EventLogWriter({ banks: ['sha256'] });
    for (const [pcr, label] of [
      [4, 'kernel'],
      [9, 'bootstrapper'],
    ] as const) {
      await tpm.pcrExtend(pcr, [...boot.append({ pcr, type: 'EV_IPL', data: cString(label) }).digests]);
    }
    await writeFile(join(dir, 'boot.log'), boot.bytes());
    const node = await open(join(dir, 'boot.log'));
    expect(node.tcgEventLog()).toEqual(boot.bytes()); // nothing of its own yet
    await new NodeLock(tpm, { eventLog: node.runtime }).tryLock(randomBytes(32), 'init');
    const sent = parseEventLog(node.tcgEventLog()!);
    expect(sent.events.map((e) => [e.index, e.pcr, e.typeName])).toEqual([
      [0, 0, 'EV_NO_ACTION'],
      [1, 4, 'EV_IPL'],
      [2, 9, 'EV_IPL'],
      [3, 15, 'EV_EVENT_TAG'],
    ]);
    expect(replayEventLog(sent).get('sha256')).toEqual(await tpm.pcrRead('sha256', [4, 9, 15]));
  });

  it('attests without a boot log it cannot send, and says why', async () => {
    const said = (): string[] => lines.splice(0).filter((line) => !line.startsWith('info event log '));
    expect((await open(join(dir, 'missing'))).tcgEventLog()).toBeUndefined();
    expect(said()).toEqual([expect.stringMatching(/^info no boot event log: the node attests without one/)]);
    const sha1 = await open(join(repoRoot(), 'testdata', 'eventlogs', 'debian-10.bin'));
    expect(sha1.tcgEventLog()).toBeUndefined();
    expect(said()).toEqual([
      expect.stringMatching(/^warn boot event log has no SHA-256 bank: not sent .*"format":"sha1"/),
    ]);
    await writeFile(join(dir, 'huge.log'), Buffer.alloc(61 * 1024));
    expect((await open(join(dir, 'huge.log'))).tcgEventLog()).toBeUndefined();
    expect(said()).toEqual([
      expect.stringMatching(
        /^warn boot event log not readable: the node attests without one .*larger than 61440 bytes/,
      ),
    ]);
    await writeFile(join(dir, 'garbage.log'), Buffer.from('not an event log'));
    expect((await open(join(dir, 'garbage.log'))).tcgEventLog()).toBeUndefined();
    expect(said()).toEqual([
      expect.stringMatching(/^warn boot event log is malformed: not sent .*event log: event 0 at offset 0/),
    ]);
  });

  it('sends no log without a boot log, but still keeps its runtime log (SHA-256 bank)', async () => {
    // A log of PCR 15 alone would claim the boot PCRs were never extended: verifiers refuse that.
    const node = await open(join(dir, 'missing'));
    await new NodeLock(tpm, { eventLog: node.runtime }).tryLock(randomBytes(32), 'join');
    expect(node.tcgEventLog()).toBeUndefined();
    const kept = parseEventLog(node.runtime.bytes());
    expect(kept.banks).toEqual(['sha256']);
    expect(replayEventLog(kept).get('sha256')).toEqual(await tpm.pcrRead('sha256', [15]));
  });
});
