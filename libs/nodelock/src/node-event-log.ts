import { open } from 'node:fs/promises';
import { appendEventLog, parseEventLog } from '@constellation/eventlog';
import type { BankName } from '@constellation/eventlog';
import type { Tpm } from '@constellation/tpm';
import { CLUSTER_ID_PCR } from './node-lock.js';
import { RuntimeEventLog } from './runtime-event-log.js';

/** Where the node's event log goes: info and warn lines of the caller's logger. */
export interface EventLogLogger {
  info(message: string, fields: Record<string, unknown>): void;
  warn(message: string, fields: Record<string, unknown>): void;
}

/** Room the runtime events keep beside the boot log (each is about 100 bytes). */
const RUNTIME_ROOM = 4 * 1024;

/** What the node attests with: its own runtime log, and the log it sends (boot log + runtime events). */
export interface NodeEventLog {
  /** The bootstrapper's own events (the PCR 15 mark); NodeLock appends to it. */
  runtime: RuntimeEventLog;
  /** The log for the attestation document, read at each issue; undefined: none (no boot log to send). */
  tcgEventLog: () => Buffer | undefined;
}

/**
 * Reads the boot log (`bootLog`: the kernel's binary_bios_measurements on a real node, the log
 * mini's measured boot wrote on mini), bounded so that it and the runtime events fit in `maxBytes`
 * (the attestation document's limit for its log), and opens the runtime log (`runtimeLog`) in the
 * boot log's banks. The node sends the boot log
 * with the runtime log's events appended. A boot log that is missing, too large, malformed, in
 * the SHA-1 format or without a SHA-256 bank is not sent (the quote is SHA-256: it could not be
 * checked), and the log says why; then no log is sent at all (the runtime log, SHA-256 bank, is
 * still kept): a log of PCR 15 alone would claim that the node's measured boot PCRs were never
 * extended, and the verifier would rightly refuse it; without a log, PCR values are compared as
 * before.
 */
export async function openNodeEventLog(options: {
  bootLog: string;
  runtimeLog: string;
  tpm: Tpm;
  maxBytes: number;
  logger: EventLogLogger;
}): Promise<NodeEventLog> {
  const { logger, maxBytes } = options;
  const bootPath = options.bootLog;
  const boot = await readBootLog(bootPath, maxBytes - RUNTIME_ROOM, logger);
  const banks: readonly BankName[] = boot?.banks ?? ['sha256'];
  const runtimePath = options.runtimeLog;
  const runtime = await RuntimeEventLog.open({
    path: runtimePath,
    banks,
    pcrs: await options.tpm.pcrRead('sha256', [CLUSTER_ID_PCR]),
    warn: (message, fields) => {
      logger.warn(message, fields);
    },
  });
  logger.info('event log', {
    bootLog: boot === undefined ? 'none' : bootPath,
    bootEvents: boot?.events ?? 0,
    runtimeLog: runtimePath,
    banks,
  });
  let cached: { count: number; bytes: Buffer | undefined } | undefined;
  const tcgEventLog = (): Buffer | undefined => {
    if (cached?.count !== runtime.eventCount) {
      const bytes =
        boot === undefined
          ? undefined
          : runtime.eventCount === 0
            ? boot.bytes
            : appendEventLog(boot.bytes, runtime.bytes(), { maxBytes }).bytes;
      cached = { count: runtime.eventCount, bytes };
    }
    return cached.bytes;
  };
  return { runtime, tcgEventLog };
}

/** The boot log if it can be sent; undefined (and said in the log) otherwise. */
async function readBootLog(
  path: string,
  limit: number,
  logger: EventLogLogger,
): Promise<{ bytes: Buffer; banks: readonly BankName[]; events: number } | undefined> {
  let bytes: Buffer;
  try {
    bytes = await readBounded(path, limit);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') {
      logger.info('no boot event log: the node attests without one (its PCRs are compared by value only)', { path });
    } else {
      logger.warn('boot event log not readable: the node attests without one', {
        path,
        error: (err as Error).message,
      });
    }
    return undefined;
  }
  try {
    const log = parseEventLog(bytes, { maxBytes: limit });
    if (log.format !== 'crypto-agile' || !log.banks.includes('sha256')) {
      logger.warn('boot event log has no SHA-256 bank: not sent (the quote is SHA-256, it could not be checked)', {
        path,
        format: log.format,
        banks: log.banks,
      });
      return undefined;
    }
    return { bytes, banks: log.banks, events: log.events.length };
  } catch (err) {
    logger.warn('boot event log is malformed: not sent', { path, error: (err as Error).message });
    return undefined;
  }
}

/**
 * Reads at most `limit` bytes; more is an error. securityfs reports size 0 for
 * binary_bios_measurements, so the file is read until its end rather than by its size.
 */
async function readBounded(path: string, limit: number): Promise<Buffer> {
  const handle = await open(path, 'r');
  try {
    const buffer = Buffer.alloc(limit + 1);
    let length = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, null);
      if (bytesRead === 0) break;
      length += bytesRead;
      if (length > limit) throw new Error(`larger than ${limit} bytes, the limit of the log a node sends`);
    }
    return buffer.subarray(0, length);
  } finally {
    await handle.close();
  }
}
