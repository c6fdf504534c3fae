// The unified kernel image: systemd-stub (systemd-boot-efi's linuxx64.efi.stub, from the image's
// own packages) with the os-release, the kernel command line, the kernel and the initrd as PE
// sections, as ukify would (Debian 12's systemd 252 has no ukify). The stub measures the sections
// into PCR 11 and hands the kernel its command line and initrd.
import { readFile, stat, writeFile } from 'node:fs/promises';
import { setPeTimestamp } from './pe-header.js';
import { run } from './progress.js';

/** Sections and the addresses they load at, in the layout systemd-stub 252 expects. */
const SECTIONS = [
  { name: '.osrel', vma: 0x20000 },
  { name: '.cmdline', vma: 0x30000 },
  { name: '.linux', vma: 0x2000000 },
  { name: '.initrd', vma: 0x3000000 },
] as const;

export const UKI_STUB = '/usr/lib/systemd/boot/efi/linuxx64.efi.stub';

export interface UkiParts {
  /** systemd-stub, as a file on the host (copied out of the image). */
  stub: string;
  osRelease: string;
  cmdline: string;
  kernel: string;
  initrd: string;
}

/** Writes the UKI to `out`, its PE timestamp `epoch` (objcopy would write the time of the build). */
export async function buildUki(parts: UkiParts, out: string, epoch: number): Promise<void> {
  const files: Record<(typeof SECTIONS)[number]['name'], string> = {
    '.osrel': parts.osRelease,
    '.cmdline': parts.cmdline,
    '.linux': parts.kernel,
    '.initrd': parts.initrd,
  };
  const kernelSize = (await stat(parts.kernel)).size;
  if (0x2000000 + kernelSize > 0x3000000) {
    throw new Error(`the kernel (${kernelSize} bytes) does not fit below the initrd's address 0x3000000`);
  }
  const args: string[] = [];
  for (const section of SECTIONS) {
    args.push(
      '--add-section',
      `${section.name}=${files[section.name]}`,
      '--change-section-vma',
      `${section.name}=0x${section.vma.toString(16)}`,
    );
  }
  await run('objcopy', [...args, parts.stub, out]);
  const image = await readFile(out);
  setPeTimestamp(image, epoch);
  await writeFile(out, image);
}
