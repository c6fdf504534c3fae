// Reading a node's serial console: the boot's phases with their times, the PCR line and the event
// log the image's constellation-boot-measurements unit prints (rootfs-files.ts).
import { createHash } from 'node:crypto';
import type { SerialLine } from './boot-vm.js';
import { BOOT_MEASUREMENTS } from './rootfs-files.js';

export interface BootMeasurements {
  /** PCR index → sha256 bank value (hex), as the guest read it. */
  pcrs: Record<number, string>;
  /** The firmware's TCG event log (binary_bios_measurements), checked against its printed size and digest. */
  eventLog: Buffer | undefined;
}

const BASE64_LINE = /^[A-Za-z0-9+/=]+$/;

/** The PCR line and the event log; undefined fields for what the log does not hold (yet). */
export function parseBootMeasurements(serial: string): BootMeasurements {
  const lines = serial.split(/\r?\n/);
  const { prefix, pcrLine, logBegin, logEnd } = BOOT_MEASUREMENTS;
  const pcrs: Record<number, string> = {};
  let eventLog: Buffer | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    const at = line.indexOf(prefix);
    if (at < 0) continue;
    const rest = line.slice(at + prefix.length).trim();
    if (rest.startsWith(`${pcrLine} `)) {
      for (const match of rest.matchAll(/(\d+)=([0-9a-f]{64}|unavailable)/g)) {
        if (match[1] !== undefined && match[2] !== undefined) pcrs[Number(match[1])] = match[2];
      }
    }
    const begin = new RegExp(`^${logBegin} (\\d+) bytes sha256 ([0-9a-f]{64})$`).exec(rest);
    if (begin?.[1] !== undefined && begin[2] !== undefined) {
      const chunks: string[] = [];
      let j = i + 1;
      for (; j < lines.length; j++) {
        const chunk = lines[j] ?? '';
        if (chunk.includes(`${prefix} ${logEnd}`)) break;
        // A line of base64; or one that another writer on the console began (a prompt without a
        // newline), whose last 76 characters are a full line of ours. The digest check catches the rest.
        if (BASE64_LINE.test(chunk)) chunks.push(chunk);
        else {
          const tail = /\s([A-Za-z0-9+/]{76})$/.exec(chunk)?.[1];
          if (tail !== undefined) chunks.push(tail);
        }
      }
      if (j === lines.length) break; // not complete yet
      const bytes = Buffer.from(chunks.join(''), 'base64');
      const digest = createHash('sha256').update(bytes).digest('hex');
      if (bytes.length !== Number(begin[1]) || digest !== begin[2]) {
        throw new Error(
          `the event log on the console is damaged: ${bytes.length} bytes with sha256 ${digest}, the guest printed ${begin[1]} bytes with sha256 ${begin[2]}`,
        );
      }
      eventLog = bytes;
      i = j;
    }
  }
  return { pcrs, eventLog };
}

export interface BootTimeline {
  /** When the kernel started, after QEMU started (ms): OVMF, then systemd-stub. */
  kernelStartMs: number | undefined;
  /** When the initrd switched to systemd. */
  switchRootMs: number | undefined;
  /** When systemd reached multi-user.target. */
  multiUserMs: number | undefined;
  /** When systemd said it started the bootstrapper's unit. */
  bootstrapperStartedMs: number | undefined;
  /** The initrd's error line, if it failed. */
  initrdError: string | undefined;
  /** A kernel panic line, if any. */
  panic: string | undefined;
}

/**
 * systemd's status line for the bootstrapper's unit (its name may be shortened with "…", its
 * description is not), or the bootstrapper's own first log line.
 */
export const BOOTSTRAPPER_STARTED =
  /Started .*(constellation-bootstrapper|Constellation node bootstrapper)|"bootstrapper starting"/;

const firstAt = (lines: readonly SerialLine[], pattern: RegExp): number | undefined =>
  lines.find((line) => pattern.test(line.text))?.atMs;

/**
 * The boot's phases from the serial lines' arrival times. The kernel's start is the earliest
 * arrival time less the kernel's own timestamp of a line (its early lines are printed late, all
 * at once, when the serial console starts; later ones as they happen).
 */
export function bootTimeline(lines: readonly SerialLine[]): BootTimeline {
  let kernelStartMs: number | undefined;
  for (const line of lines) {
    const stamp = /^\[\s*(\d+\.\d+)\]/.exec(line.text)?.[1];
    if (stamp === undefined) continue;
    const start = line.atMs - Number(stamp) * 1000;
    if (kernelStartMs === undefined || start < kernelStartMs) kernelStartMs = start;
  }
  return {
    kernelStartMs: kernelStartMs === undefined ? undefined : Math.max(0, Math.round(kernelStartMs)),
    switchRootMs: firstAt(lines, /constellation-initrd: switching to systemd/),
    multiUserMs: firstAt(lines, /Reached target .*(multi-user\.target|Multi-User System)/),
    bootstrapperStartedMs: firstAt(lines, BOOTSTRAPPER_STARTED),
    initrdError: lines.find((line) => line.text.includes('constellation-initrd: error:'))?.text,
    panic: lines.find((line) => /Kernel panic/.test(line.text))?.text,
  };
}
