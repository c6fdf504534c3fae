import { execFile } from 'node:child_process';
import { appendFile, copyFile, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * How a tampered VM's boot differs from the node image, each a change the real chain measures:
 * - `cmdline`: a word added to the UKI's kernel command line (systemd-stub's .cmdline event in
 *   PCR 11, the kernel stub's command line in PCR 9);
 * - `initrd`: a file added to the initrd (a second cpio archive after the image's; PCR 11's
 *   .initrd event and the kernel stub's initrd event in PCR 9);
 * - `kernel`: 16 bytes appended to the kernel (another kernel image as the firmware sees it: its
 *   Authenticode digest in PCR 4, PCR 11's .linux event). It still boots.
 */
export const VM_TAMPER_MODES = ['cmdline', 'initrd', 'kernel'] as const;
export type VmTamper = (typeof VM_TAMPER_MODES)[number];

const SECTION: Record<VmTamper, string> = { cmdline: '.cmdline', initrd: '.initrd', kernel: '.linux' };

async function tool(program: string, args: readonly string[]): Promise<void> {
  try {
    await run(program, [...args], { timeout: 60_000, maxBuffer: 1 << 20 });
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr?.trim();
    throw new Error(`${program} ${args.join(' ')} failed: ${stderr ?? String(error)}`, { cause: error });
  }
}

/** A newc cpio archive holding one file (what the kernel unpacks after the image's initrd). */
function cpioWithOneFile(name: string, content: Buffer): Buffer {
  const entry = (path: string, mode: number, data: Buffer): Buffer => {
    const hex = (n: number): string => n.toString(16).padStart(8, '0');
    const fields = [1, mode, 0, 0, 1, 0, data.length, 0, 0, 0, 0, path.length + 1, 0];
    const header = Buffer.from(`070701${fields.map(hex).join('')}${path}\0`, 'latin1');
    const pad = (length: number): Buffer => Buffer.alloc((4 - (length % 4)) % 4);
    return Buffer.concat([header, pad(header.length), data, pad(data.length)]);
  };
  return Buffer.concat([entry(name, 0o100644, content), entry('TRAILER!!!', 0, Buffer.alloc(0))]);
}

/**
 * A modified copy of the image's ESP for one VM, in `dir`: the UKI's section changed with objcopy
 * and written over the ESP's \EFI\BOOT\BOOTX64.EFI with mtools. Returns the ESP's path.
 */
export async function tamperedEsp(image: { uki: string; esp: string }, tamper: VmTamper, dir: string): Promise<string> {
  const section = SECTION[tamper];
  const content = join(dir, `tampered${section}`);
  await tool('objcopy', [`--dump-section`, `${section}=${content}`, image.uki, join(dir, 'uki-unused.efi')]);
  if (tamper === 'cmdline') {
    const text = await readFile(content, 'latin1');
    const end = /\s*\0*$/.exec(text)?.[0] ?? '';
    await writeFile(content, `${text.slice(0, text.length - end.length)} constellation.tampered=1${end}`, 'latin1');
  } else if (tamper === 'initrd') {
    // Archives start on 4-byte boundaries; the kernel skips the NUL padding between them.
    const { length } = await readFile(content);
    await appendFile(content, Buffer.alloc((4 - (length % 4)) % 4));
    await appendFile(content, cpioWithOneFile('tampered', Buffer.from('added after the image was measured\n')));
  } else {
    await appendFile(content, Buffer.alloc(16, 0xa5));
  }
  const uki = join(dir, 'uki-tampered.efi');
  await tool('objcopy', ['--update-section', `${section}=${content}`, image.uki, uki]);
  const esp = join(dir, 'esp-tampered.img');
  await copyFile(image.esp, esp);
  await tool('mcopy', ['-o', '-i', esp, uki, '::/EFI/BOOT/BOOTX64.EFI']);
  return esp;
}
