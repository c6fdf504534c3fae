// The EFI system partition image: FAT with the UKI as the removable-media boot path
// \EFI\BOOT\BOOTX64.EFI (firmware boots it without a boot entry). Written with mtools, no mount;
// fixed volume id, label and timestamps.
import { open, stat, utimes } from 'node:fs/promises';
import { ESP } from './recipe.js';
import { run } from './progress.js';

const MIB = 1024 * 1024;

/** Writes `out`: a FAT32 image big enough for `uki` with room to spare, holding it as BOOTX64.EFI. */
export async function buildEsp(uki: string, out: string, epoch: number): Promise<void> {
  const ukiBytes = (await stat(uki)).size;
  // FAT32 needs at least 65525 clusters: 64 MiB with 512-byte clusters and room for the UKI.
  const sizeMiB = Math.max(64, Math.ceil((ukiBytes * 1.25) / MIB) + 8);
  const file = await open(out, 'w');
  await file.truncate(sizeMiB * MIB);
  await file.close();
  await run('mkfs.vfat', ['-F', '32', '-S', '512', '-s', '1', '-i', ESP.volumeId, '-n', ESP.label, '--invariant', out]);
  const env = { ...process.env, SOURCE_DATE_EPOCH: String(epoch), MTOOLS_SKIP_CHECK: '1', TZ: 'UTC' };
  await run('mmd', ['-i', out, '::/EFI', '::/EFI/BOOT'], { env });
  // mcopy -m keeps the file's own timestamp.
  await utimes(uki, epoch, epoch);
  await run('mcopy', ['-i', out, '-m', uki, '::/EFI/BOOT/BOOTX64.EFI'], { env });
}
