import { randomBytes } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { AttestedTlsServer } from '@constellation/atls';
import { deriveClusterId, deriveMeasurementSecret, deriveStateDiskKey, masterSecretToJson } from '@constellation/keys';
import { InitServiceService, RecoveryServiceService } from '@constellation/proto';
import type {
  DescribeResponse,
  InitRequest,
  InitResponse,
  RecoverRequest,
  RecoverResponse,
} from '@constellation/proto';
import { describe, expect, it } from 'vitest';
import { writeClusterState } from './cluster-state.js';
import { attestedWorkspace } from './attested-workspace.fixture.js';
import { GENUINE_MEASUREMENTS, useGenuineMachine } from './genuine-machine.fixture.js';
import { runInit } from './init-command.js';
import { recoverNode } from './recover-command.js';
import { workspaceFiles, writeWorkspaceFile } from './workspace.js';
import { errorMessage } from '@constellation/errors';

/*
 * Attacker 2 with attacker 1's network position, found by a red-team pass: the owner of ONE
 * genuine machine of the cluster, say worker-1, with a TPM certified by the cluster's EK CA and
 * booted from the cluster's image (its quotes show exactly the configured measurements, PCR 15
 * zero before it rejoins), runs its own attested-TLS server with its own TPM and gets the
 * operator's `constellation recover` connection: a DNS answer, an address the operator mistyped
 * or the platform reassigned, or a redirect by whoever sits on the path. The CLI checks that the
 * machine is genuine and runs the image, not that it is the one the operator meant, and it used
 * to send the master secret, which derives every node's disk key, to it: from `recover`, and
 * from `init` (with the init secret).
 */

const { ekCa, machine } = useGenuineMachine('worker-1');
const measurements = GENUINE_MEASUREMENTS;

function workspace(port: number): Promise<string> {
  return attestedWorkspace({ port, measurements, ekCa: ekCa() });
}

/** A master secret of a cluster of its own in the workspace `dir`. */
async function writeRandomMasterSecret(dir: string): Promise<void> {
  await writeWorkspaceFile(
    workspaceFiles(dir).masterSecret,
    masterSecretToJson({ key: randomBytes(32), salt: randomBytes(32) }),
    true,
  );
}

/** The worker owner's server: its own genuine TPM attests every connection; it keeps what it gets. */
async function ownersServer(add: (server: grpc.Server) => void): Promise<{ port: number; close(): Promise<void> }> {
  const server = new grpc.Server();
  add(server);
  const atls = new AttestedTlsServer(server, { issuer: machine().issuer });
  const port = await atls.listen(0, '127.0.0.1');
  return {
    port,
    close: async () => {
      await atls.close(100);
      server.forceShutdown();
    },
  };
}

describe("the owner of one genuine worker answers the operator's recover (attacker 2)", () => {
  it('gets a key for its own disk and TPM and the measurement secret, never the master secret', async () => {
    const received: RecoverRequest[] = [];
    const masterSecret = { key: randomBytes(32), salt: randomBytes(32) };
    const measurementSalt = randomBytes(32);
    const measurementSecret = deriveMeasurementSecret(masterSecret.key, masterSecret.salt);
    const clusterId = deriveClusterId(measurementSecret, measurementSalt);
    const diskUuid = '3f2504e0-4f89-41d3-9a0c-0305e82c3301';
    const owner = await ownersServer((server) => {
      server.addService(RecoveryServiceService, {
        // It describes itself with the cluster ID the operator expects (public: every member
        // records it) and a disk of its choice.
        describe: (_call: unknown, callback: grpc.sendUnaryData<DescribeResponse>) => {
          callback(null, { diskUuid, clusterIdHex: clusterId.toString('hex') });
        },
        recover: (
          call: grpc.ServerUnaryCall<RecoverRequest, RecoverResponse>,
          callback: grpc.sendUnaryData<RecoverResponse>,
        ) => {
          received.push(call.request);
          callback(null, { diskUuid, clusterIdHex: clusterId.toString('hex') });
        },
      });
    });
    try {
      const dir = await workspace(owner.port);
      const files = workspaceFiles(dir);
      await writeWorkspaceFile(files.masterSecret, masterSecretToJson(masterSecret), true);
      await writeClusterState(files.state, {
        clusterId: clusterId.toString('hex'),
        measurementSalt: measurementSalt.toString('base64'),
        initEndpoint: '127.0.0.1:9000',
        kubernetesVersion: 'v1.37.2',
      });
      const outcome = await recoverNode(dir, `127.0.0.1:${owner.port}`).then(
        (answer) => `recovered: ${JSON.stringify(answer)}`,
        (err: unknown) => errorMessage(err),
      );
      expect(outcome).toMatch(/^recovered: /);
      expect(received).toHaveLength(1);
      const [request] = received;
      const sent = [Buffer.from(request?.stateDiskKey ?? []), Buffer.from(request?.measurementSecret ?? [])];
      // Nothing it received is, or contains, the master secret or its salt.
      for (const field of sent) {
        expect(field.includes(masterSecret.key), 'master secret sent').toBe(false);
        expect(field.includes(masterSecret.salt), 'master salt sent').toBe(false);
      }
      // The disk key is bound to the TPM the worker proved: it opens no other machine's disk, not
      // even one with the UUID it named.
      expect(sent[0]).toEqual(
        deriveStateDiskKey(masterSecret.key, masterSecret.salt, diskUuid, machine().ekPublicKeyHash),
      );
      expect(sent[1]).toEqual(measurementSecret);
    } finally {
      await owner.close();
    }
  }, 120_000);

  it('sends nothing to a node that describes another cluster', async () => {
    const received: RecoverRequest[] = [];
    const owner = await ownersServer((server) => {
      server.addService(RecoveryServiceService, {
        describe: (_call: unknown, callback: grpc.sendUnaryData<DescribeResponse>) => {
          callback(null, { diskUuid: '3f2504e0-4f89-41d3-9a0c-0305e82c3301', clusterIdHex: 'cd'.repeat(32) });
        },
        recover: (
          call: grpc.ServerUnaryCall<RecoverRequest, RecoverResponse>,
          callback: grpc.sendUnaryData<RecoverResponse>,
        ) => {
          received.push(call.request);
          callback(null, { diskUuid: '', clusterIdHex: '' });
        },
      });
    });
    try {
      const dir = await workspace(owner.port);
      const files = workspaceFiles(dir);
      await writeRandomMasterSecret(dir);
      await writeClusterState(files.state, {
        clusterId: 'ab'.repeat(32),
        measurementSalt: randomBytes(32).toString('base64'),
        initEndpoint: '127.0.0.1:9000',
        kubernetesVersion: 'v1.37.2',
      });
      await expect(recoverNode(dir, `127.0.0.1:${owner.port}`)).rejects.toThrow(
        `recovery of 127.0.0.1:${String(owner.port)} failed: the node belongs to cluster ${'cd'.repeat(32)}, not to this workspace's cluster ${'ab'.repeat(32)}; nothing was sent to it`,
      );
      expect(received).toEqual([]);
    } finally {
      await owner.close();
    }
  }, 120_000);
});

describe('recover from a workspace without its cluster state', () => {
  it("warns that the node's cluster cannot be checked before it sends the measurement secret", async () => {
    // Without constellation-state.yaml the CLI knows no cluster ID to hold the node's against, so
    // a genuine machine of any cluster gets this cluster's measurement secret. Red-team finding:
    // the check was skipped without a word.
    const owner = await ownersServer((server) => {
      server.addService(RecoveryServiceService, {
        describe: (_call: unknown, callback: grpc.sendUnaryData<DescribeResponse>) => {
          callback(null, { diskUuid: '3f2504e0-4f89-41d3-9a0c-0305e82c3301', clusterIdHex: 'cd'.repeat(32) });
        },
        recover: (_call: unknown, callback: grpc.sendUnaryData<RecoverResponse>) => {
          callback(null, { diskUuid: '3f2504e0-4f89-41d3-9a0c-0305e82c3301', clusterIdHex: 'cd'.repeat(32) });
        },
      });
    });
    try {
      const dir = await workspace(owner.port);
      await writeRandomMasterSecret(dir);
      const lines: string[] = [];
      await recoverNode(dir, `127.0.0.1:${owner.port}`, (line) => lines.push(line));
      expect(lines).toContain(
        `warning: no cluster state in this workspace (${workspaceFiles(dir).state}), so the node's cluster ${'cd'.repeat(32)} is not checked: any genuine machine running the image gets this cluster's measurement secret`,
      );
    } finally {
      await owner.close();
    }
  }, 120_000);
});

describe("recover prints only what it checked of a node's answers", () => {
  it('refuses a described cluster ID that is not 64 hex digits, and an answer for another disk or cluster', async () => {
    // A genuine machine's owner controls the text of its answers, and recover printed them as
    // they came: terminal escape sequences (here one that retitles the operator's terminal) and a
    // success line for a disk and cluster other than the ones checked. Red-team finding.
    const escape = '\u001b]0;owned\u0007';
    const diskUuid = '3f2504e0-4f89-41d3-9a0c-0305e82c3301';
    let described = { diskUuid, clusterIdHex: `${'cd'.repeat(31)}${escape}` };
    let answered = { diskUuid, clusterIdHex: 'cd'.repeat(32) };
    const received: RecoverRequest[] = [];
    const owner = await ownersServer((server) => {
      server.addService(RecoveryServiceService, {
        describe: (_call: unknown, callback: grpc.sendUnaryData<DescribeResponse>) => {
          callback(null, described);
        },
        recover: (
          call: grpc.ServerUnaryCall<RecoverRequest, RecoverResponse>,
          callback: grpc.sendUnaryData<RecoverResponse>,
        ) => {
          received.push(call.request);
          callback(null, answered);
        },
      });
    });
    try {
      const dir = await workspace(owner.port);
      await writeRandomMasterSecret(dir);
      const lines: string[] = [];
      const outcome = await recoverNode(dir, `127.0.0.1:${owner.port}`, (line) => lines.push(line)).catch(
        (err: unknown) => errorMessage(err),
      );
      expect(outcome).toBe(
        `recovery of 127.0.0.1:${String(owner.port)} failed: the node named its cluster ${JSON.stringify(described.clusterIdHex)}, not a cluster ID; nothing was sent to it`,
      );
      expect(received).toEqual([]);
      for (const line of lines) expect(line).not.toContain('\u001b');

      described = { diskUuid, clusterIdHex: 'cd'.repeat(32) };
      answered = { diskUuid: `${diskUuid}${escape}`, clusterIdHex: 'ab'.repeat(32) };
      await expect(recoverNode(dir, `127.0.0.1:${owner.port}`)).rejects.toThrow(
        `recovery of 127.0.0.1:${String(owner.port)} failed: the node answered for state disk ${JSON.stringify(answered.diskUuid)} of cluster "${'ab'.repeat(32)}", not for the disk and cluster it described`,
      );
    } finally {
      await owner.close();
    }
  }, 120_000);
});

describe('recover against a busy node', () => {
  it('asks again after the retry-after the node gave, and gives up after its attempts naming the reason', async () => {
    let describes = 0;
    let busyFor = 2;
    const owner = await ownersServer((server) => {
      server.addService(RecoveryServiceService, {
        describe: (_call: unknown, callback: grpc.sendUnaryData<DescribeResponse>) => {
          describes++;
          if (busyFor > 0) {
            busyFor--;
            const metadata = new grpc.Metadata();
            metadata.set('retry-after-ms', '50');
            callback({ code: grpc.status.UNAVAILABLE, details: 'the TPM is busy; retry', metadata });
            return;
          }
          callback(null, { diskUuid: '3f2504e0-4f89-41d3-9a0c-0305e82c3301', clusterIdHex: 'ab'.repeat(32) });
        },
        recover: (_call: unknown, callback: grpc.sendUnaryData<RecoverResponse>) => {
          callback(null, { diskUuid: '3f2504e0-4f89-41d3-9a0c-0305e82c3301', clusterIdHex: 'ab'.repeat(32) });
        },
      });
    });
    try {
      const dir = await workspace(owner.port);
      await writeRandomMasterSecret(dir);
      const answer = await recoverNode(dir, `127.0.0.1:${owner.port}`, () => undefined, {
        attempts: 5,
        delayMs: 10_000,
      });
      expect(answer.clusterIdHex).toBe('ab'.repeat(32));
      expect(describes).toBe(3);
      busyFor = 10;
      await expect(
        recoverNode(dir, `127.0.0.1:${owner.port}`, () => undefined, { attempts: 2, delayMs: 10_000 }),
      ).rejects.toThrow(`recovery of 127.0.0.1:${String(owner.port)} failed: 14 UNAVAILABLE: the TPM is busy; retry`);
    } finally {
      await owner.close();
    }
  }, 120_000);
});

describe("the owner of one genuine worker answers the operator's init (attacker 2)", () => {
  /** The owner's InitServer: it keeps every request it gets. */
  async function initTaker(): Promise<{ port: number; received: InitRequest[]; close(): Promise<void> }> {
    const received: InitRequest[] = [];
    const owner = await ownersServer((server) => {
      server.addService(InitServiceService, {
        init: (call: grpc.ServerWritableStream<InitRequest, InitResponse>) => {
          received.push(call.request);
          call.emit('error', { code: grpc.status.PERMISSION_DENIED, details: 'kept it' });
        },
      });
    });
    return { ...owner, received };
  }

  it('sends nothing to a genuine machine that is not the first control plane the configuration names', async () => {
    const owner = await initTaker();
    try {
      const expected = 'ab'.repeat(32);
      const dir = await attestedWorkspace({
        port: owner.port,
        measurements,
        ekCa: ekCa(),
        firstControlPlaneEk: expected,
        initSecret: 'the-operators-init-secret',
      });
      await expect(runInit({ workspace: dir, print: () => undefined, attempts: 1 })).rejects.toThrow(
        `the node at 127.0.0.1:${String(owner.port)} failed attestation, nothing was sent to it: its endorsement key sha256:${machine().ekPublicKeyHash} is not the expected first control-plane node's (attestation.firstControlPlaneEk sha256:${expected})`,
      );
      expect(owner.received).toEqual([]);
    } finally {
      await owner.close();
    }
  }, 120_000);

  it('sends to the machine the configuration names, and warns when it names none', async () => {
    const owner = await initTaker();
    try {
      const named = await attestedWorkspace({
        port: owner.port,
        measurements,
        ekCa: ekCa(),
        firstControlPlaneEk: machine().ekPublicKeyHash,
        initSecret: 's',
      });
      await expect(runInit({ workspace: named, print: () => undefined, attempts: 1 })).rejects.toThrow('kept it');
      expect(owner.received).toHaveLength(1);
      const lines: string[] = [];
      const unnamed = await attestedWorkspace({ port: owner.port, measurements, ekCa: ekCa(), initSecret: 's' });
      await expect(runInit({ workspace: unnamed, print: (l) => lines.push(l), attempts: 1 })).rejects.toThrow(
        'kept it',
      );
      expect(lines).toContain(
        'warning: attestation.firstControlPlaneEk is not set, so any genuine machine running the image at this address would get the secrets',
      );
    } finally {
      await owner.close();
    }
  }, 120_000);
});
