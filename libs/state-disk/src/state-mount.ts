import { execFile } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { StateDisk } from './state-disk.js';
import { StateDiskError } from './state-disk.js';

const run = promisify(execFile);

export interface StateMountOptions {
  /** The dm-crypt mapping's name: /dev/mapper/<name>. */
  mapperName: string;
  /** Where the disk's file system is mounted (/run/state on a node image). */
  mountPoint: string;
  /**
   * Directories that live on the disk: `source` (relative to the mount point) is bind-mounted on
   * `target`, so what the node writes there survives a reboot encrypted (/etc/kubernetes, say).
   */
  binds: readonly { source: string; target: string }[];
  /** Bound for each program run (mkfs of a large disk takes a while). Default 5 min. */
  timeoutMs?: number;
}

/**
 * Maps the state disk with dm-crypt (opened by `passphrase`), mounts its ext4 file system and
 * binds the persistent directories from it. `fresh`: the disk was formatted in this boot, so a
 * missing file system is made; a member's disk without one is refused, never formatted over.
 * Each step is skipped when already done (a bootstrapper restarted within the boot).
 */
export async function mountStateDisk(
  disk: StateDisk,
  passphrase: Buffer,
  options: StateMountOptions,
  fresh: boolean,
): Promise<void> {
  const timeout = options.timeoutMs ?? 5 * 60_000;
  const mapped = await disk.open(options.mapperName, passphrase);
  const fileSystem = await fileSystemType(mapped, timeout);
  if (fileSystem === undefined) {
    if (!fresh)
      throw new StateDiskError(
        `the state disk (${disk.device}) opened, but ${mapped} holds no file system: refusing to make one on a member's disk`,
      );
    await step(`make the state disk's file system on ${mapped}`, () =>
      run('mkfs.ext4', ['-q', '-L', 'constellation-state', mapped], { timeout }),
    );
  } else if (fileSystem !== 'ext4') {
    throw new StateDiskError(`${mapped} holds a ${fileSystem} file system; the state disk's is ext4`);
  }
  await mountOnce(mapped, options.mountPoint, ['-t', 'ext4', '-o', 'nosuid,nodev'], mapped, timeout);
  for (const { source, target } of options.binds) {
    const from = join(options.mountPoint, source);
    await mkdir(from, { recursive: true, mode: 0o755 });
    // findmnt names a bind mount by its file system and the directory inside it.
    await mountOnce(from, target, ['--bind'], `${mapped}[/${source}]`, timeout);
  }
}

/** The file system blkid finds on `device` (probing the device itself), or undefined for none. */
async function fileSystemType(device: string, timeout: number): Promise<string | undefined> {
  try {
    const { stdout } = await run('blkid', ['-p', '-s', 'TYPE', '-o', 'value', device], { timeout });
    const type = stdout.trim();
    return type === '' ? undefined : type;
  } catch (err) {
    // blkid's exit code 2: nothing found on the device.
    if ((err as { code?: unknown }).code === 2) return undefined;
    throw new StateDiskError(`could not probe ${device} for a file system: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * Mounts `what` on `where` unless the topmost mount there is already `source` (as findmnt names
 * it). Another mount there (a node image's tmpfs on /etc/kubernetes) is mounted over, not taken
 * for done: whatever the node writes must land on the disk.
 */
async function mountOnce(what: string, where: string, args: string[], source: string, timeout: number): Promise<void> {
  await mkdir(where, { recursive: true, mode: 0o755 });
  const sources = await run('findmnt', ['-n', '-o', 'SOURCE', '--mountpoint', where], { timeout }).then(
    ({ stdout }) => stdout.trim().split('\n'),
    () => [], // exit 1: nothing is mounted there
  );
  if (sources.at(-1)?.trim() === source) return;
  await step(`mount ${what} on ${where}`, () => run('mount', [...args, what, where], { timeout }));
}

async function step(what: string, action: () => Promise<unknown>): Promise<void> {
  try {
    await action();
  } catch (err) {
    const stderr = (err as { stderr?: unknown }).stderr;
    const said = typeof stderr === 'string' && stderr.trim() !== '' ? stderr.trim() : (err as Error).message;
    throw new StateDiskError(`could not ${what}: ${said}`, { cause: err });
  }
}
