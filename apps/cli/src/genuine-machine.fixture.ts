import { TpmIssuer, componentDigest, expectedMeasurements, measureBoot } from '@constellation/attestation';
import type { BootComponent, Measurements } from '@constellation/attestation';
import type { EkCa } from '@constellation/swtpm';
import { startSwtpm, useTestEkCa } from '@constellation/testing';
import { SocketTransport, Tpm } from '@constellation/tpm';
import { afterAll, beforeAll } from 'vitest';

const BOOT: BootComponent[] = [{ pcr: 9, description: 'bootstrapper bundle', digest: componentDigest('bundle v1') }];
/** What the cluster of these tests measures: the image every genuine machine boots. */
export const GENUINE_MEASUREMENTS: Measurements = expectedMeasurements(BOOT, [9, 15]);

export interface GenuineMachine {
  /** Rooted (tpm2-ek) issuer over the machine's own TPM. */
  issuer: TpmIssuer;
  ekPublicKeyHash: string;
}

/**
 * A genuine machine of the cluster for a test file (started in beforeAll, stopped in afterAll):
 * an swtpm manufactured with an EK certificate from the file's test EK CA, measured-booted from
 * the cluster's image, so its quotes show exactly GENUINE_MEASUREMENTS with PCR 15 at zero.
 */
export function useGenuineMachine(name: string): { ekCa: () => EkCa; machine: () => GenuineMachine } {
  const ekCa = useTestEkCa();
  let started: { machine: GenuineMachine; stop: () => Promise<void> } | undefined;
  beforeAll(async () => {
    const swtpm = await startSwtpm({ manufacture: { ca: ekCa(), vmid: name } });
    const tpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port, keepConnection: true }));
    await measureBoot(tpm, BOOT);
    started = {
      machine: { issuer: await TpmIssuer.rooted(tpm), ekPublicKeyHash: swtpm.manufactured?.ekPublicKeyHash ?? '' },
      stop: async () => {
        await tpm.close();
        await swtpm.stop();
      },
    };
  }, 60_000);
  afterAll(async () => {
    await started?.stop();
  });
  return {
    ekCa,
    machine: () => {
      if (started === undefined) throw new Error(`the genuine machine ${name} is not started (use it inside tests)`);
      return started.machine;
    },
  };
}
