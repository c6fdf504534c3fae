import type { Tpm } from '@constellation/tpm';
import type { RuntimeEventLog } from './runtime-event-log.js';

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
 *
 * With a runtime event log, the mark is logged as an EV_EVENT_TAG event in PCR 15 whose data is
 * the cluster ID (TPM2_PCR_Event extends the hash of exactly that data in every bank, so the data
 * hashes to its digests): the verifier replays PCR 15 like the firmware's PCRs.
 */
export class NodeLock {
  private readonly tpm: Tpm;
  private holder: string | undefined;
  private readonly eventLog: RuntimeEventLog | undefined;

  constructor(tpm: Tpm, options: { eventLog?: RuntimeEventLog } = {}) {
    this.tpm = tpm;
    this.eventLog = options.eventLog;
  }

  /** Takes the lock for `who` ("init", "join") and marks the TPM; false if someone already holds it. */
  async tryLock(clusterId: Buffer, who: string): Promise<boolean> {
    if (clusterId.length !== 32) throw new RangeError(`cluster ID must be 32 bytes, got ${clusterId.length}`);
    if (this.holder !== undefined) return false;
    this.holder = who;
    this.eventLog?.append({ pcr: CLUSTER_ID_PCR, type: 'EV_EVENT_TAG', data: clusterId });
    await this.tpm.pcrEvent(CLUSTER_ID_PCR, clusterId);
    await this.eventLog?.save();
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
