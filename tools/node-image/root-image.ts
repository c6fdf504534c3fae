// The read-only root: the image's root filesystem as squashfs, and its dm-verity hash tree.
//
// squashfs rather than ext4: it is read-only by construction (nothing can remount it writable),
// mksquashfs -reproducible writes the same bytes for the same tree (sorted, one timestamp, no
// UUID to pin), and it is compressed (zstd). ext4 would need a fixed UUID, hash seed and
// timestamps, and e2fsprogs' reproducibility is not something it promises. squashfs keeps
// extended attributes (file capabilities) but not POSIX ACLs: the few directories with ACLs
// (systemd's journal) lose them, and /var is a copy in memory at runtime anyway.
import { chmod, stat } from 'node:fs/promises';
import { VERITY } from './recipe.js';
import { run } from './progress.js';

/** Writes `<out>` as the squashfs image of `root`, every timestamp `epoch`. */
export async function buildSquashfs(root: string, out: string, epoch: number): Promise<void> {
  await run('mksquashfs', [
    root,
    out,
    '-noappend',
    '-reproducible',
    '-mkfs-time',
    String(epoch),
    '-all-time',
    String(epoch),
    '-comp',
    'zstd',
    // Level 3: 7 s here for 220 MB; the default 15 takes 2 minutes for 191 MB.
    '-Xcompression-level',
    '3',
    '-no-progress',
    '-quiet',
  ]);
  const size = (await stat(out)).size;
  if (size % VERITY.dataBlockSize !== 0) {
    throw new Error(`${out}: ${size} bytes, not a multiple of dm-verity's ${VERITY.dataBlockSize}-byte blocks`);
  }
}

export interface VerityTree {
  rootHash: string;
  /** veritysetup's description of the tree (dump of its superblock). */
  dataBlocks: number;
}

/** Writes the dm-verity hash tree of `data` into `hashFile` with the fixed salt and UUID; returns the root hash. */
export async function formatVerity(data: string, hashFile: string): Promise<VerityTree> {
  const output = await run('veritysetup', [
    'format',
    data,
    hashFile,
    `--salt=${VERITY.salt}`,
    `--uuid=${VERITY.uuid}`,
    `--hash=${VERITY.hashAlgorithm}`,
    `--data-block-size=${VERITY.dataBlockSize}`,
    `--hash-block-size=${VERITY.hashBlockSize}`,
  ]);
  // veritysetup creates the file private; it is as public as the image it describes.
  await chmod(hashFile, 0o644);
  const rootHash = /^Root hash:\s*([0-9a-f]{64})\s*$/m.exec(output)?.[1];
  const dataBlocks = Number(/^Data blocks:\s*(\d+)/m.exec(output)?.[1]);
  if (rootHash === undefined || !Number.isInteger(dataBlocks)) {
    throw new Error(`veritysetup format printed no root hash or data block count:\n${output}`);
  }
  return { rootHash, dataBlocks };
}
