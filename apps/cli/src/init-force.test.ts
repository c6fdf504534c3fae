import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import type { Socket } from 'node:net';
import { componentDigest, expectedMeasurements } from '@constellation/attestation';
import { tempDirForTest } from '@constellation/testing';
import { describe, expect, it, onTestFinished } from 'vitest';
import { configYaml } from './constellation-conf.js';
import { runInit } from './init-command.js';
import { workspaceFiles, writeWorkspaceFile } from './workspace.js';

/** A TCP listener standing in for the node: it only counts who connects. */
async function countingNode(): Promise<{ port: number; connections: () => number }> {
  let connections = 0;
  const sockets: Socket[] = [];
  const server = createServer((socket) => {
    connections++;
    sockets.push(socket);
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
      }),
  );
  const address = server.address();
  return { port: typeof address === 'object' && address !== null ? address.port : 0, connections: () => connections };
}

async function workspaceFor(port: number): Promise<string> {
  const workspace = await tempDirForTest();
  const files = workspaceFiles(workspace);
  await writeWorkspaceFile(
    files.config,
    configYaml({
      name: 'c',
      kubernetesVersion: 'v1.37.2',
      initEndpoint: `127.0.0.1:${port}`,
      apiServerCertSans: [],
      serviceCidr: '10.96.0.0/12',
      attestation: {
        variant: 'qemu-vtpm',
        measurements: expectedMeasurements([{ pcr: 9, description: 'b', digest: componentDigest('b') }], [9, 15]),
      },
    }),
    false,
  );
  await writeWorkspaceFile(files.initSecret, 'secret', true);
  return workspace;
}

describe('constellation init and an existing master secret', () => {
  it('refuses to overwrite it without --force, says why, and contacts no node', async () => {
    const node = await countingNode();
    const workspace = await workspaceFor(node.port);
    const { masterSecret } = workspaceFiles(workspace);
    await writeWorkspaceFile(masterSecret, '{"key":"the only recovery secret"}', true);
    await expect(runInit({ workspace, print: () => undefined, attempts: 1 })).rejects.toThrow(
      `${masterSecret} exists: it may be the only recovery secret of a cluster an earlier init already locked; move it away (or pass --force to replace it) and run init again`,
    );
    expect(await readFile(masterSecret, 'utf8')).toBe('{"key":"the only recovery secret"}');
    expect(node.connections()).toBe(0);
  });

  it('replaces it with force, and then goes on to dial the node', async () => {
    const node = await countingNode();
    const workspace = await workspaceFor(node.port);
    const { masterSecret } = workspaceFiles(workspace);
    await writeWorkspaceFile(masterSecret, '{"key":"old"}', true);
    await expect(runInit({ workspace, print: () => undefined, attempts: 1, force: true })).rejects.toThrow();
    expect(await readFile(masterSecret, 'utf8')).not.toBe('{"key":"old"}');
    expect(node.connections()).toBeGreaterThan(0);
  });
});
