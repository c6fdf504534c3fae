import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { repoRoot, runChecked } from '@constellation/testing';

/** The real event logs of `testdata/eventlogs/` (README there) and their expected PCRs. */
export const EVENTLOG_DIR = join(repoRoot(), 'testdata', 'eventlogs');

export interface RealLog {
  readonly name: string;
  readonly path: string;
  readonly bytes: Buffer;
  /** bank -> PCR index (decimal string) -> lower-case hex, from expected-pcrs.json. */
  readonly expected: Record<string, Record<string, string>>;
}

export async function realLogs(): Promise<RealLog[]> {
  const expected = JSON.parse(await readFile(join(EVENTLOG_DIR, 'expected-pcrs.json'), 'utf8')) as Record<
    string,
    { pcrs: Record<string, Record<string, string>> }
  >;
  const names = (await readdir(EVENTLOG_DIR)).filter((n) => n.endsWith('.bin')).sort();
  return Promise.all(
    names.map(async (name) => {
      const entry = expected[name];
      if (entry === undefined) throw new Error(`expected-pcrs.json has no entry for ${name}`);
      const path = join(EVENTLOG_DIR, name);
      return { name, path, bytes: await readFile(path), expected: entry.pcrs };
    }),
  );
}

/** What tpm2_eventlog (tpm2-tools) reports for a log: each event's PCR, type and digests, and the PCRs. */
export interface Tpm2EventlogReport {
  readonly events: { pcr: number; type: string; digests: Record<string, string> }[];
  readonly pcrs: Record<string, Record<string, string>>;
}

/**
 * Runs tpm2_eventlog on `path` and reads its YAML line by line (its SHA-1-format output repeats
 * keys without list markers, which a YAML parser refuses).
 */
export async function tpm2Eventlog(path: string): Promise<Tpm2EventlogReport> {
  const { stdout } = await runChecked('tpm2_eventlog', [path], { timeoutMs: 20_000 });
  const events: Tpm2EventlogReport['events'] = [];
  const pcrs: Record<string, Record<string, string>> = {};
  let algorithm: string | undefined;
  let bank: Record<string, string> | undefined;
  let inPcrs = false;
  for (const line of stdout.toString('utf8').split('\n')) {
    if (line === 'pcrs:') {
      inPcrs = true;
      continue;
    }
    if (inPcrs) {
      const bankLine = /^ {2}(\w+):$/.exec(line);
      if (bankLine !== null) {
        bank = {};
        pcrs[bankLine[1] ?? ''] = bank;
      }
      const pcrLine = /^ {4}(\d+)\s*: 0x([0-9a-f]+)$/.exec(line);
      if (pcrLine !== null && bank !== undefined) bank[pcrLine[1] ?? ''] = pcrLine[2] ?? '';
      continue;
    }
    const pcr = /^-? *PCRIndex: (\d+)$/.exec(line.trim());
    if (pcr !== null) events.push({ pcr: Number(pcr[1]), type: '', digests: {} });
    const current = events[events.length - 1];
    const type = /^EventType: (\S+)$/.exec(line.trim());
    if (type !== null && current !== undefined) current.type = type[1] ?? '';
    const alg = /^- AlgorithmId: (\w+)$/.exec(line.trim());
    if (alg !== null) algorithm = alg[1];
    const digest = /^Digest: "([0-9a-f]+)"$/.exec(line.trim());
    if (digest !== null && current !== undefined) {
      // The SHA-1-format first event has a Digest line without an AlgorithmId.
      current.digests[algorithm ?? 'sha1'] = digest[1] ?? '';
      algorithm = undefined;
    }
  }
  return { events, pcrs };
}
