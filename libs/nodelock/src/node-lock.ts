import type { Tpm } from '@constellation/tpm';

/** PCR that records which cluster a node belongs to. */
export const CLUSTER_ID_PCR = 15;

/**
 * The one-way lock that decides whether this boot initialises or joins a cluster. It goes from
 * unlocked to locked exactly once per boot and never back. Taking it extends PCR 15 with the
 * cluster ID, so every later attestation shows which cluster the node committed to; a reboot
 * (TPM reset) is the only way back to zero.
 *
 * The in-process flag decides the race; the TPM mark is the durable record. If marking fails the
 * lock still counts as taken (the caller is past its point of no return) and the error is thrown.
 */
export class NodeLock {
  private readonly tpm: Tpm;
  private holder: string | undefined;

  constructor(tpm: Tpm) {
    this.tpm = tpm;
  }

  /** Takes the lock for `who` ("init", "join") and marks the TPM; false if someone already holds it. */
  async tryLock(clusterId: Buffer, who: string): Promise<boolean> {
    if (clusterId.length !== 32) throw new RangeError(`cluster ID must be 32 bytes, got ${clusterId.length}`);
    if (this.holder !== undefined) return false;
    this.holder = who;
    await this.tpm.pcrEvent(CLUSTER_ID_PCR, clusterId);
    return true;
  }

  /** Who took the lock this boot, if anyone. */
  get heldBy(): string | undefined {
    return this.holder;
  }
}

/** Whether this node committed to a cluster since the TPM was last reset: PCR 15 is not zero. */
export async function isNodeMarked(tpm: Tpm): Promise<boolean> {
  const value = (await tpm.pcrRead('sha256', [CLUSTER_ID_PCR])).get(CLUSTER_ID_PCR);
  if (value === undefined) throw new Error(`PCR ${CLUSTER_ID_PCR} could not be read`);
  return !value.equals(Buffer.alloc(value.length));
}
