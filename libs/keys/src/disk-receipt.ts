import { createHmac, timingSafeEqual } from 'node:crypto';
import { deriveDataKey } from './key-hierarchy.js';

/**
 * A join's receipt for a (disk, machine) pair: HMAC-SHA256, keyed with data key "diskReceipt",
 * over `<disk uuid in lower case>@<machine id>`. The JoinService puts it in every join ticket
 * and init makes the first node's; the node keeps it in its state disk's LUKS2 header and shows
 * it to rejoin. So a rejoin ticket goes only to a machine that joined with that disk, as a
 * record per (disk, machine) in the API did, without a write per join or records that only
 * grow. Not secret: it opens nothing, and only the machine it names can use it.
 */
export function deriveDiskReceipt(
  masterSecret: Uint8Array,
  masterSalt: Uint8Array,
  diskUuid: string,
  machineId: string,
): Buffer {
  // The text is unambiguous only while a UUID cannot hold the "@".
  if (!/^[0-9a-fA-F-]{8,64}$/.test(diskUuid)) throw new RangeError(`"${diskUuid}" is not a disk UUID`);
  if (machineId === '') throw new RangeError('machine id must not be empty');
  // No disk's key has this id: disk ids are hex UUIDs (deriveStateDiskKey).
  return createHmac('sha256', deriveDataKey(masterSecret, masterSalt, 'diskReceipt'))
    .update(`${diskUuid.toLowerCase()}@${machineId}`)
    .digest();
}

/** Whether `receipt` is the one for this disk and machine (compared in constant time). */
export function isDiskReceipt(
  receipt: Uint8Array,
  masterSecret: Uint8Array,
  masterSalt: Uint8Array,
  diskUuid: string,
  machineId: string,
): boolean {
  const expected = deriveDiskReceipt(masterSecret, masterSalt, diskUuid, machineId);
  return receipt.length === expected.length && timingSafeEqual(receipt, expected);
}
