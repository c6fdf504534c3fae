import { mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import type { Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';

async function tempDirForTest(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'constellation-files-test-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return dir;
}
import { MAX_UNIX_SOCKET_PATH_BYTES, withUnixSocketPath } from './unix-socket-path.js';

async function listen(path: string): Promise<Server> {
  const server = createServer((socket) => socket.end('hello'));
  await withUnixSocketPath(
    path,
    (usable) =>
      new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(usable, resolve);
      }),
  );
  onTestFinished(
    () =>
      new Promise<void>((resolve) =>
        server.close(() => {
          resolve();
        }),
      ),
  );
  return server;
}

async function greeting(path: string): Promise<string> {
  return withUnixSocketPath(
    path,
    (usable) =>
      new Promise<string>((resolve, reject) => {
        let text = '';
        connect(usable)
          .on('data', (chunk: Buffer) => (text += chunk.toString()))
          .on('end', () => {
            resolve(text);
          })
          .on('error', reject);
      }),
  );
}

describe('unix socket paths', () => {
  it('binds and connects a socket whose path is longer than the kernel takes, at exactly that path', async () => {
    const dir = join(await tempDirForTest(), 'a workspace with a long name', 'x'.repeat(60), 'run', 'constellation');
    await mkdir(dir, { recursive: true });
    const path = join(dir, 'attestation-agent.sock');
    expect(Buffer.byteLength(path)).toBeGreaterThan(MAX_UNIX_SOCKET_PATH_BYTES);
    await listen(path);
    expect((await stat(path)).isSocket()).toBe(true);
    expect(await greeting(path)).toBe('hello');
  });

  it('uses a short path as it is', async () => {
    const path = join(await tempDirForTest(), 's.sock');
    await listen(path);
    expect(await withUnixSocketPath(path, (usable) => Promise.resolve(usable))).toBe(path);
    expect(await greeting(path)).toBe('hello');
  });
});
