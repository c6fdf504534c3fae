import { TpmIssuer, componentDigest, expectedMeasurements } from '@constellation/attestation';
import { SoftwareAttester } from '@constellation/attestation/testing';
import { startSwtpm, useTestEkCa } from '@constellation/testing';
import { SocketTransport, Tpm } from '@constellation/tpm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attestedWorkspace } from './attested-workspace.fixture.js';
import { recordingInitNode } from './recording-init-node.fixture.js';
import { runInit } from './init-command.js';
import { verifyNode } from './verify-command.js';
import { errorMessage } from '@constellation/errors';

// Attacker 1 poses as the first control-plane node: no TPM, the cluster's public measurements,
// and (in the second case) the public EK certificate of a genuine machine.
const measurements = expectedMeasurements(
  [{ pcr: 9, description: 'bootstrapper bundle', digest: componentDigest('bundle v1') }],
  [9, 15],
);
const ekCa = useTestEkCa();
let genuineTpm: Tpm;
let stopSwtpm: () => Promise<void>;
let genuine: TpmIssuer;

beforeAll(async () => {
  const swtpm = await startSwtpm({ manufacture: { ca: ekCa(), vmid: 'genuine' } });
  stopSwtpm = () => swtpm.stop();
  genuineTpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port }));
  genuine = await TpmIssuer.rooted(genuineTpm);
});

afterAll(async () => {
  await genuineTpm.close();
  await stopSwtpm();
});

function workspaceFor(port: number, variant: 'tpm2-ek' | 'qemu-vtpm' = 'tpm2-ek'): Promise<string> {
  return attestedWorkspace({
    port,
    measurements,
    ...(variant === 'tpm2-ek' ? { ekCa: ekCa() } : {}),
    initSecret: 'secret',
  });
}

describe('constellation init and verify against a fake node with no TPM', () => {
  it('sends nothing to a software attester that presents the right PCR values', async () => {
    const node = await recordingInitNode(new SoftwareAttester({ claims: measurements }));
    try {
      const workspace = await workspaceFor(node.port);
      const err = await runInit({ workspace, print: () => undefined, attempts: 1 }).catch((e: unknown) => e);
      expect(errorMessage(err)).toBe(
        `the node at 127.0.0.1:${node.port} failed attestation, nothing was sent to it: server certificate carries no attestation for an accepted variant: tpm2-ek (1.3.9900.5.100)`,
      );
      expect(node.received).toEqual([]);
    } finally {
      await node.close();
    }
  });

  it("sends nothing to a software attester that presents a genuine machine's EK certificate", async () => {
    const node = await recordingInitNode(
      new SoftwareAttester({ claims: measurements, stolenIdentity: genuine.rooted?.identity }),
    );
    try {
      const workspace = await workspaceFor(node.port);
      const err = await runInit({ workspace, print: () => undefined, attempts: 1 }).catch((e: unknown) => e);
      expect(errorMessage(err)).toBe(
        `the node at 127.0.0.1:${node.port} failed attestation, nothing was sent to it: credential activation failed: the attestation key does not live in the TPM that holds the certified endorsement key`,
      );
      expect(node.received).toEqual([]);
      // verify does not report it as verified either.
      await expect(verifyNode(workspace, `127.0.0.1:${node.port}`)).rejects.toThrow(
        `could not attest 127.0.0.1:${node.port}: credential activation failed: the attestation key does not live in the TPM that holds the certified endorsement key`,
      );
    } finally {
      await node.close();
    }
  });

  it('verify reports a genuine node with its proven endorsement key', async () => {
    const node = await recordingInitNode(genuine);
    try {
      const workspace = await workspaceFor(node.port);
      const report = await verifyNode(workspace, `127.0.0.1:${node.port}`);
      expect(report.endorsementKey).toMatch(/^[0-9a-f]{64}$/);
      expect(report.pcrs.find((p) => p.pcr === 15)?.matches).toBe(true);
    } finally {
      await node.close();
    }
  });

  it('with qemu-vtpm, named explicitly, the same software attester gets the secrets: the warning says so', async () => {
    const node = await recordingInitNode(new SoftwareAttester({ claims: measurements }));
    try {
      const workspace = await workspaceFor(node.port, 'qemu-vtpm');
      const lines: string[] = [];
      await runInit({ workspace, print: (l) => lines.push(l), attempts: 1 }).catch(() => undefined);
      expect(node.received).toHaveLength(1);
      expect(lines).toContain(
        'attestation variant "qemu-vtpm" trusts any attestation key: anyone who knows the expected PCR values can pass it without a TPM; use "tpm2-ek" wherever the TPM has an EK certificate',
      );
    } finally {
      await node.close();
    }
  });
});
