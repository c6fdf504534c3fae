import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { StateDisk } from '@constellation/state-disk';
import { withTimeout } from '@constellation/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestNode, startCluster } from './node.fixture.js';
import type { Cluster } from './node.fixture.js';

// A first boot formats the state disk while the InitServer starts (StateDisk.formatInBackground):
// the format no longer delays listening, so its failure must still end the start, with the reason.
let cluster: Cluster;
let node: TestNode;

beforeAll(async () => {
  cluster = await startCluster([{ name: 'control-plane-0', role: 'control-plane' }]);
  node = await TestNode.create(cluster, 'control-plane-0');
});

afterAll(async () => {
  await node.stop();
  await cluster.close();
});

describe('first boot', () => {
  it('ends the start with the fatal action when the state disk cannot be formatted, saying so', async () => {
    const failing = join(node.root, 'cryptsetup-fails');
    await writeFile(failing, '#!/bin/sh\necho "device is read-only" >&2\nexit 5\n', { mode: 0o755 });
    node.context.disk = new StateDisk({ device: join(node.root, 'state.img'), kdf: 'fast', cryptsetup: failing });
    const run = node.bootstrapper().run();
    await expect(withTimeout(run, 20_000, 'the bootstrapper')).rejects.toThrow(
      /formatting the state disk for first boot failed: could not format the state disk \(.*state\.img\): .*exited with 5/,
    );
    expect(node.fatalErrors.map((e) => e.message)).toEqual([
      expect.stringMatching(/^formatting the state disk for first boot failed: /) as unknown,
    ]);
  });
});
