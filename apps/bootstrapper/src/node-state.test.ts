import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createTempDir } from '@constellation/testing';
import type { TempDir } from '@constellation/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readNodeState, writeNodeState } from './node-state.js';

let dir: TempDir;
beforeEach(async () => {
  dir = await createTempDir('constellation-node-state-');
});
afterEach(async () => {
  await dir.remove();
});

describe('node state file', () => {
  it('reads back what was written', async () => {
    const path = join(dir.path, 'node-state.json');
    const state = { role: 'worker' as const, measurementSalt: Buffer.alloc(32, 7), clusterId: Buffer.alloc(32, 9) };
    await writeNodeState(path, state);
    await expect(readNodeState(path)).resolves.toEqual(state);
  });

  it('refuses a malformed file naming the file and the field', async () => {
    const path = join(dir.path, 'node-state.json');
    const good = { role: 'worker', measurementSalt: 'AAAA', clusterId: 'ab'.repeat(32) };
    await writeFile(path, JSON.stringify({ ...good, clusterId: 'AB'.repeat(32) }));
    await expect(readNodeState(path)).rejects.toThrow(`node state ${path}: clusterId: expected a string matching`);
    await writeFile(path, JSON.stringify({ ...good, secret: 'x' }));
    await expect(readNodeState(path)).rejects.toThrow(`node state ${path}: secret: unexpected field`);
    await writeFile(path, '{');
    await expect(readNodeState(path)).rejects.toThrow(`node state ${path}: `);
  });
});
