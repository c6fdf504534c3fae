import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { EventLogWriter, parseEventLog, replayEventLog } from '@constellation/eventlog';
import type { BankName, EventToWrite, WrittenEvent } from '@constellation/eventlog';

/** Most bytes of a runtime log read back at start (it holds one event per boot: a few hundred bytes). */
const MAX_RUNTIME_LOG_BYTES = 16 * 1024;

/**
 * The bootstrapper's own TCG event log: what it extends into PCRs itself (the PCR 15 cluster-ID
 * mark), as a crypto-agile log of the boot log's banks, kept in a file beside the boot log
 * (/run: gone at reboot, as the PCRs are). The node sends it appended to the boot log
 * (appendEventLog), so that the verifier replays PCR 15 as well. Events are appended before the
 * extend and the file is written after it: the file holds exactly what was extended.
 */
export class RuntimeEventLog {
  readonly path: string;
  readonly banks: readonly BankName[];
  private writer: EventLogWriter;

  private constructor(path: string, banks: readonly BankName[], writer: EventLogWriter) {
    this.path = path;
    this.banks = banks;
    this.writer = writer;
  }

  /**
   * The runtime log of this boot at `path`. `pcrs` are the TPM's current values in the SHA-256
   * bank: when every PCR the log would explain is still at its reset value (nothing was extended
   * this boot), any file there is from an earlier boot and is replaced by an empty log. Otherwise
   * the file is kept only if its replay gives exactly those values (the bootstrapper restarted
   * within the boot); if not, it starts empty and `warn` says why (the PCRs it cannot explain are
   * then compared by value only).
   */
  static async open(options: {
    path: string;
    banks: readonly BankName[];
    /** The SHA-256 values of the PCRs the bootstrapper extends (PCR 15). */
    pcrs: ReadonlyMap<number, Buffer>;
    warn: (message: string, fields: Record<string, unknown>) => void;
  }): Promise<RuntimeEventLog> {
    const fresh = (): RuntimeEventLog =>
      new RuntimeEventLog(options.path, options.banks, new EventLogWriter({ banks: options.banks }));
    const untouched = [...options.pcrs.values()].every((value) => value.equals(Buffer.alloc(value.length)));
    if (untouched) {
      const log = fresh();
      await log.save();
      return log;
    }
    const kept = await readKept(options.path, options.banks, options.pcrs).catch((err: unknown) => {
      options.warn('runtime event log not usable: its PCRs are compared by value only', {
        path: options.path,
        error: err instanceof Error ? err.message : String(err),
      });
      return undefined;
    });
    if (kept === undefined) {
      const log = fresh();
      await log.save();
      return log;
    }
    return new RuntimeEventLog(options.path, options.banks, kept);
  }

  /** Logs an event (before its extend); returns the digests to extend. */
  append(event: EventToWrite): WrittenEvent {
    return this.writer.append(event);
  }

  /** Writes the file (after the extend), atomically. */
  async save(): Promise<void> {
    await mkdir(dirname(this.path), { recursive: true });
    const temporary = `${this.path}.tmp`;
    await writeFile(temporary, this.writer.bytes(), { mode: 0o644 });
    await rename(temporary, this.path);
  }

  /** The log as a standalone crypto-agile log (header included). */
  bytes(): Buffer {
    return this.writer.bytes();
  }

  /** Events logged this boot (the header not counted). */
  get eventCount(): number {
    return this.writer.eventCount - 1;
  }

  /** Removes the file (tests). */
  async remove(): Promise<void> {
    await rm(this.path, { force: true });
  }
}

/** The file's events in a new writer, if it parses, has `banks` and replays to `pcrs`. */
async function readKept(
  path: string,
  banks: readonly BankName[],
  pcrs: ReadonlyMap<number, Buffer>,
): Promise<EventLogWriter> {
  const bytes = await readFile(path);
  const log = parseEventLog(bytes, { maxBytes: MAX_RUNTIME_LOG_BYTES });
  if (log.format !== 'crypto-agile' || log.banks.join(',') !== banks.join(',')) {
    throw new Error(`its banks (${log.banks.join(',')}) are not the boot log's (${banks.join(',')})`);
  }
  const replayed = replayEventLog(log).get('sha256') ?? new Map<number, Buffer>();
  for (const [pcr, value] of pcrs) {
    const mine = replayed.get(pcr) ?? Buffer.alloc(value.length);
    if (!mine.equals(value)) {
      throw new Error(`it replays PCR ${pcr} to ${mine.toString('hex')}, the TPM holds ${value.toString('hex')}`);
    }
  }
  const writer = new EventLogWriter({ banks });
  for (const event of log.events.slice(1)) {
    writer.append({
      pcr: event.pcr,
      type: event.type,
      data: event.data,
      digests: Object.fromEntries(event.digests),
    });
  }
  return writer;
}
