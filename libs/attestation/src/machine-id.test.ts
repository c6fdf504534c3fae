// An unrooted machine's id must be what the JoinService derives from its attestation (the AK name
// of a validated document), and must survive a reboot: the init node records it for its disk, and
// after a reboot it asks for a rejoin ticket under the same id.
import { createTempDir, startSwtpm } from '@constellation/testing';
import { SocketTransport, Tpm } from '@constellation/tpm';
import { describe, expect, it } from 'vitest';
import { attestationKeyMachineId, machineIdOf } from './machine-id.js';
import { componentDigest, expectedMeasurements, measureBoot } from './measured-boot.js';
import { TpmIssuer } from './tpm-issuer.js';
import { TpmValidator } from './tpm-validator.js';

const BOOT = [{ pcr: 4, description: 'kernel', digest: componentDigest('kernel v1') }];

/** Boots a TPM from `stateDir` (a reboot when the directory holds a TPM already) and reads the id. */
async function bootAndIdentify(stateDir: string): Promise<{ id: string; validatedId: string }> {
  const swtpm = await startSwtpm({ stateDir });
  const tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port, keepConnection: true }));
  try {
    await tpm.startup();
    const events = await measureBoot(tpm, BOOT);
    const issuer = new TpmIssuer(tpm, { eventLog: () => events });
    const nonce = Buffer.alloc(32, 7);
    const validator = new TpmValidator({ variant: 'qemu-vtpm', measurements: expectedMeasurements(BOOT, [4]) });
    const result = validator.validate(await issuer.issue(Buffer.alloc(0), nonce), nonce);
    return { id: await machineIdOf(issuer), validatedId: attestationKeyMachineId(result.attestationKeyName) };
  } finally {
    await tpm.close();
    await swtpm.stop();
  }
}

describe('machineIdOf an unrooted issuer', () => {
  it('is the id the JoinService derives from its documents, and the same after a reboot', async () => {
    const dir = await createTempDir('constellation-machine-id-');
    try {
      const first = await bootAndIdentify(dir.path);
      expect(first.id).toMatch(/^ak-000b[0-9a-f]{64}$/); // TPM name: SHA-256 (0x000b) and digest
      expect(first.id).toBe(first.validatedId);
      const rebooted = await bootAndIdentify(dir.path);
      expect(rebooted).toEqual(first);
    } finally {
      await dir.remove();
    }
  });
});
