import { access, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { requireProgram, runChecked, runCommand } from '@constellation/testing';

// Real images for the tests: Debian's systemd-stub (package systemd-boot-efi), UKIs objcopy builds
// from it, and the independent tools the digests are checked against (pesign, osslsigncode,
// systemd-measure). Nothing is downloaded; tools/dev/ensure-deps.sh installs all of it.

export const STUB_PATH = '/usr/lib/systemd/boot/efi/linuxx64.efi.stub';
/** systemd-measure ships in Debian's systemd package, outside PATH. */
export const SYSTEMD_MEASURE = '/usr/lib/systemd/systemd-measure';
const TOOL_TIMEOUT_MS = 30_000;

/** The systemd-stub 252 EFI binary, or a failure that says how to install it. */
export async function readStub(): Promise<Buffer> {
  try {
    await access(STUB_PATH);
  } catch {
    throw new Error(
      `${STUB_PATH} is missing; install the Debian package systemd-boot-efi (tools/dev/ensure-deps.sh does)`,
    );
  }
  return readFile(STUB_PATH);
}

/**
 * A stand-in kernel: the stub itself (a real x86-64 EFI application) with MajorImageVersion 1,
 * which systemd-stub 252 requires of a kernel it starts through LoadImage (Linux >= 5.8 sets it).
 */
export function standInKernel(stub: Buffer): Buffer {
  const kernel = Buffer.from(stub);
  const optionalHeader = kernel.readUInt32LE(0x3c) + 24;
  kernel.writeUInt16LE(1, optionalHeader + 44);
  return kernel;
}

export interface UkiParts {
  readonly linux: Uint8Array;
  readonly osrel?: Uint8Array;
  readonly cmdline?: Uint8Array;
  readonly initrd?: Uint8Array;
  /** More sections: [name, content, VMA]. */
  readonly extra?: readonly (readonly [string, Uint8Array, number])[];
}

export interface BuiltUki {
  readonly path: string;
  readonly bytes: Buffer;
  /** The part files objcopy was given, by section name. */
  readonly partPaths: ReadonlyMap<string, string>;
}

/** The node image's recipe: objcopy adds the sections to the stub at the VMAs the image uses. */
export async function buildUki(dir: string, parts: UkiParts, base: string = STUB_PATH): Promise<BuiltUki> {
  const objcopy = await requireProgram('objcopy', 'binutils');
  const sections: [string, Uint8Array | undefined, number][] = [
    ['.osrel', parts.osrel, 0x20000],
    ['.cmdline', parts.cmdline, 0x30000],
    ['.linux', parts.linux, 0x2000000],
    ['.initrd', parts.initrd, 0x3000000],
    ...(parts.extra ?? []).map(([name, content, vma]): [string, Uint8Array, number] => [name, content, vma]),
  ];
  const args: string[] = [];
  const partPaths = new Map<string, string>();
  for (const [name, content, vma] of sections) {
    if (content === undefined) continue;
    const file = join(dir, `part${name}`);
    await writeFile(file, content);
    partPaths.set(name, file);
    args.push('--add-section', `${name}=${file}`, '--change-section-vma', `${name}=0x${vma.toString(16)}`);
  }
  const path = join(dir, 'uki.efi');
  await runChecked(objcopy, [...args, base, path], { timeoutMs: TOOL_TIMEOUT_MS });
  return { path, bytes: await readFile(path), partPaths };
}

/** `objcopy --dump-section`: a section's content as binutils reads it. */
export async function dumpSection(dir: string, image: string, name: string): Promise<Buffer> {
  const objcopy = await requireProgram('objcopy', 'binutils');
  const out = join(dir, `dump${name}`);
  await runChecked(objcopy, ['--dump-section', `${name}=${out}`, image, join(dir, 'dump-scratch.efi')], {
    timeoutMs: TOOL_TIMEOUT_MS,
  });
  return readFile(out);
}

/** pesign's Authenticode SHA-256 of a file (`pesign --hash --in=FILE`), lower-case hex. */
export async function pesignDigest(path: string): Promise<string> {
  const pesign = await requireProgram('pesign', 'pesign');
  const { stdout } = await runChecked(pesign, ['--hash', `--in=${path}`], { timeoutMs: TOOL_TIMEOUT_MS });
  const match = /^hash: ([0-9a-f]{64})$/m.exec(stdout.toString('utf8'));
  if (match?.[1] === undefined) throw new Error(`pesign printed no hash: ${stdout.toString('utf8')}`);
  return match[1];
}

/** Signs `input` with a throwaway self-signed key (osslsigncode, SHA-256): an image with a certificate table. */
export async function signWithOsslsigncode(dir: string, input: string): Promise<string> {
  const openssl = await requireProgram('openssl', 'openssl');
  const osslsigncode = await requireProgram('osslsigncode', 'osslsigncode');
  const key = join(dir, 'signing-key.pem');
  const cert = join(dir, 'signing-cert.pem');
  await runChecked(
    openssl,
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-subj',
      '/CN=measured-boot test',
      '-days',
      '1',
    ],
    { timeoutMs: TOOL_TIMEOUT_MS },
  );
  const output = join(dir, 'signed.efi');
  await runChecked(osslsigncode, ['sign', '-certs', cert, '-key', key, '-h', 'sha256', '-in', input, '-out', output], {
    timeoutMs: TOOL_TIMEOUT_MS,
  });
  return output;
}

/**
 * The digest osslsigncode computes over a signed file ("Calculated message digest"); its verify
 * fails on our untrusted test key, which does not matter here.
 */
export async function osslsigncodeDigest(path: string): Promise<string> {
  const osslsigncode = await requireProgram('osslsigncode', 'osslsigncode');
  const { stdout } = await runCommand(osslsigncode, ['verify', '-in', path], { timeoutMs: TOOL_TIMEOUT_MS });
  const match = /Calculated message digest\s*:\s*([0-9A-Fa-f]{64})/.exec(stdout.toString('utf8'));
  if (match?.[1] === undefined)
    throw new Error(`osslsigncode printed no calculated digest: ${stdout.toString('utf8')}`);
  return match[1].toLowerCase();
}

/**
 * systemd-measure's PCR 11 (SHA-256) for the given section files, per boot phase path ("a:b"; ":"
 * is the path before the initrd, which its JSON lists without a phase).
 */
export async function systemdMeasurePcr11(
  parts: Readonly<Record<string, string>>,
  phases: readonly string[],
): Promise<Map<string, string>> {
  try {
    await access(SYSTEMD_MEASURE);
  } catch {
    throw new Error(`${SYSTEMD_MEASURE} is missing; install the Debian package systemd`);
  }
  const args = ['calculate', '--bank=sha256', '--json=short'];
  for (const [name, path] of Object.entries(parts)) args.push(`--${name.replace(/^\./, '')}=${path}`);
  for (const phase of phases) args.push(`--phase=${phase}`);
  const { stdout } = await runChecked(SYSTEMD_MEASURE, args, { timeoutMs: TOOL_TIMEOUT_MS });
  const parsed = JSON.parse(stdout.toString('utf8')) as { sha256: { phase?: string; pcr: number; hash: string }[] };
  return new Map(parsed.sha256.map((entry) => [entry.phase ?? ':', entry.hash]));
}

export interface SyntheticSection {
  readonly name: string;
  readonly content: Uint8Array;
  /** Default: the content's length. */
  readonly virtualSize?: number;
}

/**
 * A small, valid PE image built byte by byte (PE32 or PE32+): DOS header, PE signature, COFF and
 * optional headers with 16 data directories, and sections laid out at FileAlignment 0x200 and
 * SectionAlignment 0x1000. For PE32, which no installed binary is, and for hostile variants.
 */
export function buildPe(
  format: 'PE32' | 'PE32+',
  sections: readonly SyntheticSection[],
  trailing?: Uint8Array,
): Buffer {
  const fileAlignment = 0x200;
  const sectionAlignment = 0x1000;
  const optionalSize = (format === 'PE32' ? 96 : 112) + 16 * 8;
  const peOffset = 0x40;
  const optional = peOffset + 24;
  const table = optional + optionalSize;
  const sizeOfHeaders = align(table + sections.length * 40, fileAlignment);
  let fileAt = sizeOfHeaders;
  let memoryAt = sectionAlignment;
  const placed = sections.map((s) => {
    const raw = align(s.content.length, fileAlignment);
    const entry = { ...s, pointer: s.content.length === 0 ? 0 : fileAt, raw, va: memoryAt };
    fileAt += raw;
    memoryAt += align(Math.max(s.virtualSize ?? s.content.length, 1), sectionAlignment);
    return entry;
  });
  const out = Buffer.alloc(fileAt + (trailing?.length ?? 0));
  out.write('MZ', 0, 'latin1');
  out.writeUInt32LE(peOffset, 0x3c);
  out.write('PE\0\0', peOffset, 'latin1');
  out.writeUInt16LE(format === 'PE32' ? 0x14c : 0x8664, peOffset + 4);
  out.writeUInt16LE(sections.length, peOffset + 6);
  out.writeUInt16LE(optionalSize, peOffset + 20);
  out.writeUInt16LE(0x0206, peOffset + 22);
  out.writeUInt16LE(format === 'PE32' ? 0x10b : 0x20b, optional);
  out.writeUInt32LE(sectionAlignment, optional + 16); // AddressOfEntryPoint: the first section
  out.writeUInt32LE(sectionAlignment, optional + 32);
  out.writeUInt32LE(fileAlignment, optional + 36);
  out.writeUInt32LE(memoryAt, optional + 56); // SizeOfImage
  out.writeUInt32LE(sizeOfHeaders, optional + 60);
  out.writeUInt32LE(0x12345678, optional + 64); // CheckSum: Authenticode leaves it out
  out.writeUInt16LE(10, optional + 68); // EFI application
  out.writeUInt32LE(16, optional + (format === 'PE32' ? 92 : 108));
  placed.forEach((s, i) => {
    const at = table + i * 40;
    out.write(s.name, at, 8, 'latin1');
    out.writeUInt32LE(s.virtualSize ?? s.content.length, at + 8);
    out.writeUInt32LE(s.va, at + 12);
    out.writeUInt32LE(s.raw, at + 16);
    out.writeUInt32LE(s.pointer, at + 20);
    out.writeUInt32LE(0x40000040, at + 36);
    out.set(s.content, s.pointer);
  });
  if (trailing !== undefined) out.set(trailing, fileAt);
  return out;
}

function align(n: number, to: number): number {
  return Math.ceil(n / to) * to;
}
