import { DevicePathError, devicePathText } from './device-path.js';
import { EVENT_TYPES } from './event-types.js';
import { hashesToDigests } from './measured-bytes.js';
import type { LogEvent } from './parse-event-log.js';
import { eventText, guidText, safeU64, u64Hex, utf16Text } from './uefi-text.js';

/** EFI_GLOBAL_VARIABLE: SecureBoot, PK, KEK, Boot####, BootOrder. */
export const EFI_GLOBAL_VARIABLE_GUID = '8be4df61-93ca-11d2-aa0d-00e098032b8c';
/** EFI_IMAGE_SECURITY_DATABASE_GUID: db, dbx, dbt, dbr. */
export const EFI_IMAGE_SECURITY_DATABASE_GUID = 'd719b2cb-3d3a-4596-a3bc-dad00e67656f';

/** The Secure Boot variables, by name, with the GUID that makes them the real ones. */
const SECURE_BOOT_VARIABLES: ReadonlyMap<string, string> = new Map([
  ['SecureBoot', EFI_GLOBAL_VARIABLE_GUID],
  ['PK', EFI_GLOBAL_VARIABLE_GUID],
  ['KEK', EFI_GLOBAL_VARIABLE_GUID],
  ['db', EFI_IMAGE_SECURITY_DATABASE_GUID],
  ['dbx', EFI_IMAGE_SECURITY_DATABASE_GUID],
  ['dbt', EFI_IMAGE_SECURITY_DATABASE_GUID],
  ['dbr', EFI_IMAGE_SECURITY_DATABASE_GUID],
]);

/** What an event's data says, decoded for reading. Every field comes from untrusted data. */
export type EventDetails =
  | { kind: 'spec-id'; signature: string }
  | { kind: 'startup-locality'; locality: number }
  | { kind: 'no-action'; signature: string | undefined }
  | { kind: 'separator'; value: 'normal' | 'error' }
  | {
      kind: 'uefi-variable';
      variableGuid: string;
      name: string;
      /** The name, when name and GUID are those of a Secure Boot variable (a vendor's "SecureBoot" is not). */
      secureBootVariable: string | undefined;
      dataSize: number;
      /** SecureBoot's value: 1 enabled, 0 disabled, no data when the variable does not exist. */
      secureBoot?: 'enabled' | 'disabled' | 'absent' | 'invalid';
      /** A boot option's description and device path (Boot#### variables). */
      bootOption?: { description: string; devicePath: string | undefined };
    }
  | {
      kind: 'uefi-image';
      imageLocation: string;
      imageLength: number | undefined;
      linkTimeAddress: string;
      devicePath: string | undefined;
      devicePathError?: string;
    }
  | { kind: 'grub-command'; command: string }
  | { kind: 'kernel-command-line'; commandLine: string; bootLoader: 'grub' | 'systemd-boot' }
  | { kind: 'text'; text: string }
  | { kind: 'firmware-blob'; base: string; length: string; description?: string }
  | { kind: 'gpt'; diskGuid: string; partitions: { name: string; typeGuid: string; uniqueGuid: string }[] }
  | { kind: 'bytes' }
  | { kind: 'undecodable'; reason: string };

/** Decoded event data, marked untrusted: the TPM binds only the digests to the PCR. */
export interface EventDataView {
  readonly untrusted: true;
  /**
   * Whether what `details` shows hashes to the event's digest in every bank: the whole data
   * (variables, separators, actions), or the string a boot loader measured (GRUB measures the
   * command without its "grub_cmd: " prefix, systemd-boot the command line without its NUL).
   * Once the replayed PCR matches a quote, a true value means the details are what was measured;
   * a false one means they are only the log's claim.
   */
  readonly hashesToDigests: boolean;
  readonly details: EventDetails;
}

/** Whether H(data) equals the event's digest in every bank it has. */
export function dataHashesToDigests(event: LogEvent): boolean {
  return hashesToDigests(event, event.data);
}

/** Decodes what an operator reads from an event's data. Never throws: bad data is "undecodable". */
export function describeEventData(event: LogEvent): EventDataView {
  let details: EventDetails;
  try {
    details = decode(event);
  } catch (err) {
    // Every decoder checks its sizes; a RangeError here means a decoder missed a check.
    details = { kind: 'undecodable', reason: err instanceof Error ? err.message : String(err) };
  }
  return {
    untrusted: true,
    hashesToDigests: measuredContent(event, details).some((c) => hashesToDigests(event, c)),
    details,
  };
}

/** The bytes a measuring agent may have hashed for an event whose data decoded to `details`. */
function measuredContent(event: LogEvent, details: EventDetails): Buffer[] {
  const candidates = [event.data];
  // Upstream GRUB hashes the string alone, RHEL's GRUB the string and its NUL.
  const grubString = (text: string): Buffer[] => [Buffer.from(text, 'utf8'), Buffer.from(`${text}\0`, 'utf8')];
  if (details.kind === 'grub-command') candidates.push(...grubString(details.command));
  if (details.kind === 'kernel-command-line') {
    if (details.bootLoader === 'grub') candidates.push(...grubString(details.commandLine));
    else candidates.push(Buffer.from(`${details.commandLine}\0`, 'utf16le'));
  }
  if (details.kind === 'text') {
    let end = event.data.length;
    while (end > 0 && event.data[end - 1] === 0) end--;
    candidates.push(event.data.subarray(0, end));
  }
  return candidates;
}

function decode(event: LogEvent): EventDetails {
  const data = event.data;
  switch (event.type) {
    case EVENT_TYPES.EV_NO_ACTION:
      return noAction(data);
    case EVENT_TYPES.EV_SEPARATOR:
      return { kind: 'separator', value: data.length === 4 && data.readUInt32LE(0) === 0 ? 'normal' : 'error' };
    case EVENT_TYPES.EV_EFI_VARIABLE_DRIVER_CONFIG:
    case EVENT_TYPES.EV_EFI_VARIABLE_BOOT:
    case EVENT_TYPES.EV_EFI_VARIABLE_BOOT2:
    case EVENT_TYPES.EV_EFI_VARIABLE_AUTHORITY:
      return uefiVariable(data);
    case EVENT_TYPES.EV_EFI_BOOT_SERVICES_APPLICATION:
    case EVENT_TYPES.EV_EFI_BOOT_SERVICES_DRIVER:
    case EVENT_TYPES.EV_EFI_RUNTIME_SERVICES_DRIVER:
      return uefiImage(data);
    case EVENT_TYPES.EV_IPL:
      return ipl(event);
    case EVENT_TYPES.EV_EFI_PLATFORM_FIRMWARE_BLOB:
      return firmwareBlob(data) ?? { kind: 'undecodable', reason: `expected 16 bytes, got ${data.length}` };
    case EVENT_TYPES.EV_EFI_PLATFORM_FIRMWARE_BLOB2:
      return firmwareBlob2(data);
    case EVENT_TYPES.EV_POST_CODE:
      return firmwareBlob(data) ?? textOrBytes(data);
    case EVENT_TYPES.EV_EFI_GPT_EVENT:
      return gpt(data);
    case EVENT_TYPES.EV_S_CRTM_VERSION:
    case EVENT_TYPES.EV_EFI_ACTION:
    case EVENT_TYPES.EV_ACTION:
    case EVENT_TYPES.EV_S_CRTM_CONTENTS:
    case EVENT_TYPES.EV_EFI_HCRTM_EVENT:
      return textOrBytes(data);
    default:
      return { kind: 'bytes' };
  }
}

function textOrBytes(data: Buffer): EventDetails {
  const text = eventText(data);
  return text === undefined ? { kind: 'bytes' } : { kind: 'text', text: text.text };
}

function noAction(data: Buffer): EventDetails {
  const nul = data.indexOf(0);
  const signature = nul > 0 && nul <= 32 ? eventText(data.subarray(0, nul))?.text : undefined;
  if (signature === 'Spec ID Event03') return { kind: 'spec-id', signature };
  if (signature === 'StartupLocality' && data.length === 17) {
    return { kind: 'startup-locality', locality: data[16] ?? 0 };
  }
  return { kind: 'no-action', signature };
}

/** UEFI_VARIABLE_DATA: GUID, name length (UTF-16 units), data length, name, data. */
export function uefiVariable(data: Buffer): EventDetails {
  if (data.length < 32) return { kind: 'undecodable', reason: `UEFI_VARIABLE_DATA needs 32 bytes, got ${data.length}` };
  const variableGuid = guidText(data, 0);
  const nameLength = safeU64(data, 16);
  const dataLength = safeU64(data, 24);
  // Some shim releases log a few bytes more than the variable holds; fewer is malformed.
  if (nameLength === undefined || dataLength === undefined || 32 + nameLength * 2 + dataLength > data.length) {
    return {
      kind: 'undecodable',
      reason: `UEFI_VARIABLE_DATA lengths (name ${data.readBigUInt64LE(16)} characters, data ${data.readBigUInt64LE(24)} bytes) exceed the event's ${data.length} bytes`,
    };
  }
  const name = utf16Text(data.subarray(32, 32 + nameLength * 2));
  if (name === undefined) return { kind: 'undecodable', reason: 'the variable name is not UTF-16 text' };
  const value = data.subarray(32 + nameLength * 2, 32 + nameLength * 2 + dataLength);
  const secureBootVariable = SECURE_BOOT_VARIABLES.get(name) === variableGuid ? name : undefined;
  const out: EventDetails = { kind: 'uefi-variable', variableGuid, name, secureBootVariable, dataSize: value.length };
  if (secureBootVariable === 'SecureBoot') out.secureBoot = secureBootValue(value);
  if (variableGuid === EFI_GLOBAL_VARIABLE_GUID && /^Boot[0-9A-F]{4}$/.test(name)) {
    const option = loadOption(value);
    if (option !== undefined) out.bootOption = option;
  }
  return out;
}

function secureBootValue(value: Buffer): 'enabled' | 'disabled' | 'absent' | 'invalid' {
  if (value.length === 0) return 'absent';
  if (value.length !== 1) return 'invalid';
  return value[0] === 1 ? 'enabled' : value[0] === 0 ? 'disabled' : 'invalid';
}

/** EFI_LOAD_OPTION: attributes, device path length, description (UTF-16, NUL-ended), device path. */
function loadOption(value: Buffer): { description: string; devicePath: string | undefined } | undefined {
  if (value.length < 6) return undefined;
  const pathLength = value.readUInt16LE(4);
  let end = 6;
  while (end + 1 < value.length && (value[end] !== 0 || value[end + 1] !== 0)) end += 2;
  if (end + 1 >= value.length) return undefined;
  const description = utf16Text(value.subarray(6, end));
  if (description === undefined) return undefined;
  const pathStart = end + 2;
  if (pathStart + pathLength > value.length) return { description, devicePath: undefined };
  try {
    return { description, devicePath: devicePathText(value.subarray(pathStart, pathStart + pathLength)) };
  } catch (err) {
    if (err instanceof DevicePathError) return { description, devicePath: undefined };
    throw err;
  }
}

/** UEFI_IMAGE_LOAD_EVENT: location, length, link-time address, device path length, device path. */
function uefiImage(data: Buffer): EventDetails {
  if (data.length < 32)
    return { kind: 'undecodable', reason: `UEFI_IMAGE_LOAD_EVENT needs 32 bytes, got ${data.length}` };
  const pathLength = safeU64(data, 24);
  const base = {
    kind: 'uefi-image' as const,
    imageLocation: u64Hex(data, 0),
    imageLength: safeU64(data, 8),
    linkTimeAddress: u64Hex(data, 16),
  };
  // shim logs images it loads itself with a path length of 0 and a few bytes after the header.
  if (pathLength === undefined || 32 + pathLength > data.length) {
    return {
      ...base,
      devicePath: undefined,
      devicePathError: `device path length ${data.readBigUInt64LE(24)} exceeds the ${data.length - 32} bytes after the header`,
    };
  }
  if (pathLength === 0) return { ...base, devicePath: undefined };
  try {
    return { ...base, devicePath: devicePathText(data.subarray(32, 32 + pathLength)) };
  } catch (err) {
    if (err instanceof DevicePathError) return { ...base, devicePath: undefined, devicePathError: err.message };
    throw err;
  }
}

/**
 * EV_IPL strings: GRUB measures each command ("grub_cmd: …", RHEL's GRUB "grub_cmd …") and the
 * kernel command line ("kernel_cmdline: …", "grub_kernel_cmdline …") into PCR 8; systemd-boot the
 * kernel command line as UTF-16 into PCR 8 (older) or 12.
 */
function ipl(event: LogEvent): EventDetails {
  const decoded = eventText(event.data);
  if (decoded === undefined) return { kind: 'bytes' };
  const { text, encoding } = decoded;
  for (const prefix of ['grub_cmd: ', 'grub_cmd ']) {
    if (text.startsWith(prefix)) return { kind: 'grub-command', command: text.slice(prefix.length) };
  }
  for (const prefix of ['kernel_cmdline: ', 'grub_kernel_cmdline ']) {
    if (text.startsWith(prefix)) {
      return { kind: 'kernel-command-line', commandLine: text.slice(prefix.length), bootLoader: 'grub' };
    }
  }
  if (encoding === 'utf-16le' && (event.pcr === 8 || event.pcr === 12)) {
    return { kind: 'kernel-command-line', commandLine: text, bootLoader: 'systemd-boot' };
  }
  return { kind: 'text', text };
}

/** UEFI_PLATFORM_FIRMWARE_BLOB: base and length. */
function firmwareBlob(data: Buffer): EventDetails | undefined {
  if (data.length !== 16) return undefined;
  return { kind: 'firmware-blob', base: u64Hex(data, 0), length: u64Hex(data, 8) };
}

/** UEFI_PLATFORM_FIRMWARE_BLOB2: description (length-prefixed), base, length. */
function firmwareBlob2(data: Buffer): EventDetails {
  const size = data[0] ?? 0;
  if (data.length !== 1 + size + 16) {
    return {
      kind: 'undecodable',
      reason: `UEFI_PLATFORM_FIRMWARE_BLOB2 of ${data.length} bytes with a ${size}-byte description`,
    };
  }
  const description = eventText(data.subarray(1, 1 + size))?.text;
  const blob = { kind: 'firmware-blob' as const, base: u64Hex(data, 1 + size), length: u64Hex(data, 9 + size) };
  return description === undefined ? blob : { ...blob, description };
}

const GPT_HEADER_SIZE = 92;
const MAX_PARTITIONS = 128;

/** UEFI_GPT_DATA: the GPT header, the number of partitions, the partition entries. */
function gpt(data: Buffer): EventDetails {
  if (data.length < GPT_HEADER_SIZE + 8)
    return { kind: 'undecodable', reason: `UEFI_GPT_DATA needs ${GPT_HEADER_SIZE + 8} bytes, got ${data.length}` };
  const diskGuid = guidText(data, 56);
  const entrySize = data.readUInt32LE(84);
  const count = safeU64(data, GPT_HEADER_SIZE);
  if (count === undefined || count > MAX_PARTITIONS || entrySize < 128 || entrySize > 1024) {
    return {
      kind: 'undecodable',
      reason: `UEFI_GPT_DATA with ${data.readBigUInt64LE(GPT_HEADER_SIZE)} partitions of ${entrySize} bytes`,
    };
  }
  if (GPT_HEADER_SIZE + 8 + count * entrySize !== data.length) {
    return {
      kind: 'undecodable',
      reason: `${count} partitions of ${entrySize} bytes do not fill the event's ${data.length} bytes`,
    };
  }
  const partitions = [];
  for (let i = 0; i < count; i++) {
    const at = GPT_HEADER_SIZE + 8 + i * entrySize;
    partitions.push({
      name: utf16Text(data.subarray(at + 56, at + 128)) ?? '(not text)',
      typeGuid: guidText(data, at),
      uniqueGuid: guidText(data, at + 16),
    });
  }
  return { kind: 'gpt', diskGuid, partitions };
}
