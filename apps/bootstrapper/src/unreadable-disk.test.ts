import { randomBytes } from 'node:crypto';
import { truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { MemoryLogger } from '@constellation/logger/testing';
import { StateDisk } from '@constellation/state-disk';
import { requireProgram, tempDirForTest } from '@constellation/testing';
import { describe, expect, it } from 'vitest';
import { assessNode } from './node-assessment.js';
import type { NodeContext } from './node-context.js';
import { nodePaths } from './node-paths.js';

/*
 * A rebooting cluster member whose cryptsetup fails while the node assesses its disk (killed by
 * the OOM killer, a crash): red-team finding, any failure of `cryptsetup isLuks` or of the token
 * read counted as "not LUKS" or "not initialised", and the node formatted the disk of a cluster
 * member at once, its data and key slots gone. A failure must end the start instead (systemd
 * starts the node again), and the disk must still open with its key.
 */

/** An initialised state disk (cluster key, receipt in the token) and a cryptsetup that dies on `commands`. */
async function memberDisk(commands: string): Promise<{ dir: string; device: string; key: Buffer; dying: string }> {
  const cryptsetup = await requireProgram('cryptsetup', 'cryptsetup-bin');
  const dir = await tempDirForTest();
  const device = join(dir, 'state.img');
  await writeFile(device, '');
  await truncate(device, 32 * 1024 * 1024);
  const key = randomBytes(32);
  const disk = new StateDisk({ device, kdf: 'fast' });
  await disk.format(key);
  await disk.setInitialized(true, randomBytes(32));
  const dying = join(dir, 'cryptsetup-dies');
  // Killed as the OOM killer would: no exit code, a signal.
  await writeFile(dying, `#!/bin/sh\ncase "$1" in ${commands}) kill -9 $$ ;; esac\nexec ${cryptsetup} "$@"\n`, {
    mode: 0o755,
  });
  return { dir, device, key, dying };
}

describe('a cluster member whose cryptsetup dies while its disk is assessed', () => {
  it.each([
    [
      'isLuks',
      /could not tell whether the state disk is LUKS2 \(.*state\.img\): cryptsetup isLuks was killed by SIGKILL/,
    ],
    // Whichever command reads the token.
    [
      'token|luksDump',
      /could not read the state disk's token \(.*state\.img\): cryptsetup luksDump was killed by SIGKILL/,
    ],
  ])(
    '%s killed: the start ends with the reason, and the disk is neither formatted nor unmarked',
    async (commands, reason) => {
      const { dir, device, key, dying } = await memberDisk(commands);
      const logger = new MemoryLogger();
      const node = {
        tpm: undefined as unknown as NodeContext['tpm'],
        disk: new StateDisk({ device, kdf: 'fast', cryptsetup: dying }),
        paths: nodePaths(join(dir, 'root')),
        logger,
      };
      await expect(assessNode(node, Promise.resolve(false))).rejects.toThrow(reason);
      expect(logger.entries.map((e) => e.message)).not.toContain('formatting the state disk for first boot');
      const disk = new StateDisk({ device, kdf: 'fast' });
      await disk.ready();
      expect(await disk.testPassphrase(key)).toBe(true);
      expect(await disk.isInitialized()).toBe(true);
    },
  );
});
