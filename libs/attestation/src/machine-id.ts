import { parsePublic, publicName } from '@constellation/tpm';
import { decodeDocument } from './document.js';
import type { Issuer } from './issuer.js';

/**
 * The id a JoinService knows an unrooted (`qemu-vtpm`) machine by: its AK's TPM name. The AK is
 * a primary key from a fixed template, so the name is the same on every boot of the TPM.
 */
export function attestationKeyMachineId(akNameHex: string): string {
  return `ak-${akNameHex}`;
}

/**
 * The id a JoinService knows the machine behind `issuer` by: its EK hash under a rooted variant,
 * otherwise its AK's name (read from a document it issues: the AK exists only while it quotes).
 */
export async function machineIdOf(issuer: Issuer): Promise<string> {
  if (issuer.rooted !== undefined) return issuer.rooted.ekPublicKeyHash;
  const { akPublic } = decodeDocument(await issuer.issue(Buffer.alloc(0), Buffer.alloc(32)));
  return attestationKeyMachineId(publicName(parsePublic(akPublic)).toString('hex'));
}
