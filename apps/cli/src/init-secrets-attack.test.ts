import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { TpmIssuer, componentDigest, expectedMeasurements, measureBoot } from '@constellation/attestation';
import type { Measurements } from '@constellation/attestation';
import { SoftwareAttester } from '@constellation/attestation/testing';
import { InitStep } from '@constellation/proto';
import { startSwtpm, useTestEkCa } from '@constellation/testing';
import { SocketTransport, Tpm } from '@constellation/tpm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attestedWorkspace } from './attested-workspace.fixture.js';
import { recordingInitNode } from './recording-init-node.fixture.js';
import { runInit } from './init-command.js';
import { verifyNode } from './verify-command.js';
import { workspaceFiles, writeWorkspaceFile } from './workspace.js';

/*
 * The operator's CLI and its secrets, attacked by a red-team pass; each test failed on the code
 * before the fix: a config enforcing no boot measurement sent the master secret to any software on
 * a genuine TPM (attacker 2), `init --force` destroyed the master secret it replaced, and two inits
 * in one workspace both created and sent one.
 */

const ZERO = Buffer.alloc(32);
const IMAGE = expectedMeasurements(
  [{ pcr: 9, description: 'bootstrapper bundle', digest: componentDigest('bundle v1') }],
  [9, 15],
);

// A machine with a genuine, EK-certified TPM whose owner booted an image of their own choosing.
const ekCa = useTestEkCa();
let attackerTpm: Tpm;
let attacker: TpmIssuer;
let attackerEk = '';
let stopSwtpm: () => Promise<void> = () => Promise.resolve();

beforeAll(async () => {
  const swtpm = await startSwtpm({ manufacture: { ca: ekCa(), vmid: 'owned' } });
  stopSwtpm = () => swtpm.stop();
  attackerTpm = new Tpm(new SocketTransport({ host: swtpm.host, port: swtpm.port, keepConnection: true }));
  await measureBoot(attackerTpm, [
    { pcr: 9, description: 'attacker bundle that prints every secret it gets', digest: componentDigest('evil') },
  ]);
  attacker = await TpmIssuer.rooted(attackerTpm);
  attackerEk = swtpm.manufactured?.ekPublicKeyHash ?? '';
}, 60_000);

afterAll(async () => {
  await attackerTpm.close();
  await stopSwtpm();
});

describe('a configuration that enforces no boot measurement (attacker 2)', () => {
  // `config generate` writes exactly this until the image's values are filled in: PCR 15 = 0 and
  // nothing else. The policy check refused only an empty set, so PCR 15 alone (or boot PCRs all
  // warnOnly) passed, and init sent the master secret to a machine running any software.
  const cases: [string, Measurements][] = [
    ['only PCR 15 (what `config generate` writes)', new Map([[15, { expected: ZERO, warnOnly: false }]])],
    [
      'every boot PCR warnOnly',
      new Map([...IMAGE].map(([pcr, m]) => [pcr, pcr === 15 ? m : { ...m, warnOnly: true }] as const)),
    ],
  ];
  for (const [name, measurements] of cases) {
    it(`init refuses before dialing, and sends no master secret to an unmeasured image: ${name}`, async () => {
      const node = await recordingInitNode(attacker);
      try {
        // The operator even pinned the right hardware; the software on it is what is unchecked.
        const workspace = await attestedWorkspace({
          port: node.port,
          measurements,
          ekCa: ekCa(),
          firstControlPlaneEk: attackerEk,
          initSecret: 'the-operators-init-secret',
        });
        const err = await runInit({ workspace, print: () => undefined, attempts: 1 }).catch((e: unknown) => e);
        expect(node.received.map((r) => Buffer.from(r.masterSecret).length)).toEqual([]);
        expect(String(err)).toMatch(/attestation: the measurements enforce no boot measurement/);
        // and verify does not report the node as matching an image nobody pinned
        await expect(verifyNode(workspace, `127.0.0.1:${String(node.port)}`)).rejects.toThrow(
          /enforce no boot measurement/,
        );
      } finally {
        await node.close();
      }
    }, 60_000);
  }
});

describe('the master secret in the workspace (operator error, two runs at once)', () => {
  async function plainWorkspace(port: number): Promise<string> {
    return attestedWorkspace({ port, measurements: IMAGE, initSecret: 'secret' });
  }

  it('init --force keeps the master secret it replaces (it may be the only recovery secret of a locked cluster)', async () => {
    const workspace = await plainWorkspace(1); // nothing listens: init fails after writing
    const { masterSecret } = workspaceFiles(workspace);
    const old = '{"key":"the only recovery secret of a locked cluster"}\n';
    await writeWorkspaceFile(masterSecret, old, true);
    await runInit({ workspace, print: () => undefined, attempts: 1, force: true }).catch(() => undefined);
    const kept: string[] = [];
    for (const name of await readdir(workspace))
      if ((await readFile(join(workspace, name), 'utf8').catch(() => '')) === old) kept.push(name);
    // Before: the old secret was gone for good (renamed over, no backup).
    expect(kept).toEqual([expect.stringMatching(/^constellation-mastersecret\.json\..+\.bak$/)]);
  }, 30_000);

  it('two inits in one workspace: only one may create the master secret and reach the node', async () => {
    const node = await recordingInitNode(new SoftwareAttester({ claims: IMAGE }));
    try {
      const workspace = await plainWorkspace(node.port);
      const { masterSecret } = workspaceFiles(workspace);
      const outcomes = await Promise.allSettled([
        runInit({ workspace, print: () => undefined, attempts: 1 }),
        runInit({ workspace, print: () => undefined, attempts: 1 }),
      ]);
      const onDisk = JSON.parse(await readFile(masterSecret, 'utf8')) as { key: string };
      const sent = node.received.map((r) => Buffer.from(r.masterSecret).toString('base64'));
      // Before: both passed the "exists" check (access() then rename-over), both wrote, both sent;
      // the file held whichever wrote last, and the node may have locked with the other one.
      const refusedForExisting = outcomes.filter((o) => o.status === 'rejected' && /exists/.test(String(o.reason)));
      expect({ refusedForExisting: refusedForExisting.length, reachedTheNode: sent.length }).toEqual({
        refusedForExisting: 1,
        reachedTheNode: 1,
      });
      for (const key of sent) expect(key).toBe(onDisk.key);
    } finally {
      await node.close();
    }
  }, 60_000);
});

describe('what init keeps of a failed node', () => {
  it("writes the node's logs owner-only: they are the node's text, not the operator's to share", async () => {
    const node = await recordingInitNode(new SoftwareAttester({ claims: IMAGE }), [
      {
        kind: {
          $case: 'failure',
          value: { error: 'kubeadm init failed', step: InitStep.INIT_STEP_KUBEADM_INIT, retrySafe: true },
        },
      },
      { kind: { $case: 'log', value: { data: Buffer.from('{"message":"kubeadm init failed"}\n') } } },
      { kind: { $case: 'logsDone', value: { bytesSent: 33, collectionError: '' } } },
    ]);
    try {
      const workspace = await attestedWorkspace({ port: node.port, measurements: IMAGE, initSecret: 'secret' });
      const printed: string[] = [];
      await expect(runInit({ workspace, print: (line) => printed.push(line), attempts: 1 })).rejects.toThrow(
        'init failed: kubeadm init failed',
      );
      const logPath = /^the node's logs are in (.+)$/.exec(
        printed.find((l) => l.startsWith("the node's logs")) ?? '',
      )?.[1];
      expect(logPath).toBeDefined();
      expect(await readFile(logPath ?? '', 'utf8')).toBe('{"message":"kubeadm init failed"}\n');
      expect((await stat(logPath ?? '')).mode & 0o777).toBe(0o600);
    } finally {
      await node.close();
    }
  }, 60_000);
});
