import { createHash, hkdfSync } from 'node:crypto';

/*
 * The cluster's key hierarchy, as in Constellation (reference/constellation.md section 3). All
 * derivations are HKDF-SHA256 (RFC 5869); the info string is "key-" + id. Keeping these exact
 * means a cluster's IDs and disk keys are reproducible from its master secret alone.
 */

const KEY_LENGTH = 32;

/** Any data key: HKDF-SHA256(ikm = master secret, salt = master salt, info = "key-" + id). */
export function deriveDataKey(
  masterSecret: Uint8Array,
  masterSalt: Uint8Array,
  id: string,
  length = KEY_LENGTH,
): Buffer {
  if (id === '') throw new RangeError('data key id must not be empty');
  if (length <= 0 || length > 255 * 32) throw new RangeError(`data key length ${length} out of range`);
  return Buffer.from(hkdfSync('sha256', masterSecret, masterSalt, `key-${id}`, length));
}

/** The measurement secret: data key "measurementSecret". */
export function deriveMeasurementSecret(masterSecret: Uint8Array, masterSalt: Uint8Array): Buffer {
  return deriveDataKey(masterSecret, masterSalt, 'measurementSecret');
}

/** The cluster ID: HKDF-SHA256(ikm = measurement secret, salt = measurement salt, info = "key-clusterID"). */
export function deriveClusterId(measurementSecret: Uint8Array, measurementSalt: Uint8Array): Buffer {
  return Buffer.from(hkdfSync('sha256', measurementSecret, measurementSalt, 'key-clusterID', KEY_LENGTH));
}

/**
 * The key of a state disk: a data key whose id is the disk's lower-case LUKS UUID and, for a
 * machine with a proven TPM identity, the hash of its endorsement key (`<uuid>@<ek hash>`). Disk
 * UUIDs are not secret, so without the owner in the id any attested machine could ask for another
 * machine's disk key by naming its UUID; with it, a machine can only ever get keys for its own
 * disks. Reproducible from the master secret, the UUID and the (public) EK hash.
 */
export function deriveStateDiskKey(
  masterSecret: Uint8Array,
  masterSalt: Uint8Array,
  diskUuid: string,
  ekPublicKeyHash?: string,
): Buffer {
  if (!/^[0-9a-fA-F-]{8,64}$/.test(diskUuid)) throw new RangeError(`"${diskUuid}" is not a disk UUID`);
  if (ekPublicKeyHash === undefined) return deriveDataKey(masterSecret, masterSalt, diskUuid.toLowerCase());
  if (!/^[0-9a-f]{64}$/.test(ekPublicKeyHash))
    throw new RangeError(`"${ekPublicKeyHash}" is not a lower-case hex SHA-256 of an EK public key`);
  return deriveDataKey(masterSecret, masterSalt, `${diskUuid.toLowerCase()}@${ekPublicKeyHash}`);
}

/**
 * PCR 15 of a node marked with `clusterId` (TPM2_PCR_Event of the ID onto a reset PCR):
 * SHA-256(0^32 || SHA-256(clusterId)).
 */
export function markedPcr15(clusterId: Uint8Array): Buffer {
  const event = createHash('sha256').update(clusterId).digest();
  return createHash('sha256').update(Buffer.alloc(32)).update(event).digest();
}
