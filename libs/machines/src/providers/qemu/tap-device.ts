import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

async function ip(args: readonly string[]): Promise<void> {
  try {
    await run('ip', [...args], { timeout: 10_000 });
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr?.trim();
    throw new Error(`ip ${args.join(' ')} failed: ${stderr ?? String(error)}`, { cause: error });
  }
}

/**
 * The VM's NIC on the host: a persistent tap device on mini's bridge (it outlives QEMU, so a
 * reboot finds it again). QEMU opens it by name; nothing routes through the host's default route.
 */
export async function ensureTap(tap: string, bridge: string): Promise<void> {
  const exists = await run('ip', ['link', 'show', 'dev', tap], { timeout: 10_000 }).then(
    () => true,
    () => false,
  );
  if (!exists) await ip(['tuntap', 'add', 'dev', tap, 'mode', 'tap']);
  await ip(['link', 'set', 'dev', tap, 'master', bridge, 'up']);
}

/** Removes the tap; a missing one is fine (destroy runs after failures too). */
export async function removeTap(tap: string): Promise<void> {
  await ip(['link', 'del', 'dev', tap]).catch(() => undefined);
}
