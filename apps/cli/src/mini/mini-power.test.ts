import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tempDirForTest } from '@constellation/testing';
import { describe, expect, it } from 'vitest';
import { powerTargets } from './mini-power.js';
import type { MiniState } from './mini-state.js';

/** A workspace whose mini record lists these nodes (nothing runs: the targets are checked first). */
async function workspaceWith(names: string[], artifacts = true): Promise<string> {
  const workspace = await tempDirForTest('mini-power-');
  const dir = join(workspace, 'constellation-mini');
  await mkdir(dir, { recursive: true });
  const state: Partial<MiniState> = {
    dir,
    nodes: names.map(
      (name) => ({ name, role: 'worker', dir: join(dir, name), ip: '10.42.0.10' }) as MiniState['nodes'][number],
    ),
    ...(artifacts ? { artifacts: {} as NonNullable<MiniState['artifacts']> } : {}),
  };
  await writeFile(join(dir, 'mini.json'), JSON.stringify(state));
  return workspace;
}

describe('mini start and stop: which nodes', () => {
  it('takes the named nodes, or every node with --all, in the cluster’s order', async () => {
    const workspace = await workspaceWith(['control-plane-0', 'worker-1', 'worker-2']);
    const named = await powerTargets(workspace, { names: ['worker-2', 'worker-1'], all: false });
    expect(named.nodes.map((n) => n.name)).toEqual(['worker-1', 'worker-2']);
    const all = await powerTargets(workspace, { names: [], all: true });
    expect(all.nodes.map((n) => n.name)).toEqual(['control-plane-0', 'worker-1', 'worker-2']);
  });

  it('refuses before anything changes: no names and no --all, both, an unknown node, no cluster, an older cluster', async () => {
    const workspace = await workspaceWith(['control-plane-0', 'worker-1']);
    await expect(powerTargets(workspace, { names: [], all: false })).rejects.toThrow(
      'name the nodes (for example worker-1 worker-2) or give --all, not both',
    );
    await expect(powerTargets(workspace, { names: ['worker-1'], all: true })).rejects.toThrow(
      'or give --all, not both',
    );
    await expect(powerTargets(workspace, { names: ['worker-1', 'worker-9'], all: false })).rejects.toThrow(
      'no node "worker-9"; nodes: control-plane-0, worker-1',
    );
    const empty = await tempDirForTest('mini-power-');
    await expect(powerTargets(empty, { names: [], all: true })).rejects.toThrow(`no mini cluster in ${empty}`);
    const older = await workspaceWith(['control-plane-0'], false);
    await expect(powerTargets(older, { names: [], all: true })).rejects.toThrow(
      'was started by an older constellation',
    );
  });
});
