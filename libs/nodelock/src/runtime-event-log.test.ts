import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseEventLog, replayEventLog } from '@constellation/eventlog';
import { markedPcr15 } from '@constellation/keys';
import { startSwtpm } from '@constellation/testing';
import type { Swtpm } from '@constellation/testing';
import { SocketTransport, Tpm } from '@constellation/tpm';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NodeLock } from './node-lock.js';
import { RuntimeEventLog } from './runtime-event-log.js';

let swtpm: Swtpm;
let tpm: Tpm;
let dir: string;
const warnings: string[] = [];

beforeEach(async () => {
  swtpm = await startSwtpm();
  tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port }));
  dir = await mkdtemp(join(tmpdir(), 'runtime-event-log-'));
  warnings.length = 0;
});

afterEach(async () => {
  await tpm.close();
  await swtpm.stop();
  await rm(dir, { recursive: true, force: true });
});

const open = async (path: string) =>
  RuntimeEventLog.open({
    path,
    banks: ['sha1', 'sha256'],
    pcrs: await tpm.pcrRead('sha256', [15]),
    warn: (message, fields) => warnings.push(`${message}: ${String(fields.error)}`),
  });

describe("the bootstrapper's runtime event log", () => {
  it('logs the PCR 15 mark in step with the extend: its replay is what the TPM holds, in every bank', async () => {
    const path = join(dir, 'run', 'runtime-event-log');
    const log = await open(path);
    const clusterId = randomBytes(32);
    await new NodeLock(tpm, { eventLog: log }).tryLock(clusterId, 'join');
    const written = parseEventLog(await readFile(path));
    expect(written.events.map((e) => [e.index, e.pcr, e.typeName, e.data.toString('hex')])).toEqual([
      [0, 0, 'EV_NO_ACTION', expect.any(String)],
      [1, 15, 'EV_EVENT_TAG', clusterId.toString('hex')],
    ]);
    const replayed = replayEventLog(written);
    expect(replayed.get('sha256')?.get(15)).toEqual(markedPcr15(clusterId));
    expect(replayed.get('sha1')?.get(15)).toEqual((await tpm.pcrRead('sha1', [15])).get(15));
  });

  it('keeps its file across a restart within the boot, and starts afresh after a reboot', async () => {
    const path = join(dir, 'runtime-event-log');
    await new NodeLock(tpm, { eventLog: await open(path) }).tryLock(randomBytes(32), 'init');
    const before = await readFile(path);
    expect((await open(path)).bytes()).toEqual(before); // the bootstrapper restarted: PCR 15 still marked
    await tpm.close();
    await swtpm.stop();
    swtpm = await startSwtpm(); // a reboot: PCR 15 back at zero
    tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port }));
    expect((await open(path)).eventCount).toBe(0);
    expect(parseEventLog(await readFile(path)).events).toHaveLength(1);
    expect(warnings).toEqual([]);
  });

  it('does not keep a file that does not explain the PCR, and says why', async () => {
    const path = join(dir, 'runtime-event-log');
    await new NodeLock(tpm, { eventLog: await open(path) }).tryLock(randomBytes(32), 'init');
    await writeFile(path, (await readFile(path)).subarray(0, 40));
    expect((await open(path)).eventCount).toBe(0);
    expect(warnings).toEqual([
      expect.stringMatching(/^runtime event log not usable: its PCRs are compared by value only: event log: /),
    ]);
  });
});
