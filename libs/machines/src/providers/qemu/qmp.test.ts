// QEMU's JSON protocols against a real QEMU (a machine with no board: nothing boots) and against
// hostile peers: every refusal names what went wrong, every wait is bounded.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import type { Server } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { tempDirForTest, waitFor } from '@constellation/testing';
import { JsonSocket } from './json-socket.js';
import { Qmp } from './qmp.js';

async function hostilePeer(dir: string, onConnection: (write: (text: string) => void) => void): Promise<string> {
  const path = join(dir, 'peer.sock');
  const server: Server = createServer((socket) => {
    onConnection((text) => socket.write(text));
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  onTestFinished(
    () =>
      new Promise<void>((resolve) =>
        server.close(() => {
          resolve();
        }),
      ),
  );
  return path;
}

describe("QEMU's monitor (QMP)", () => {
  it('greets, reports the run state, names an unknown command, and quits QEMU', async () => {
    const dir = await tempDirForTest();
    const socket = join(dir, 'qmp.sock');
    const qemu = spawn(
      'qemu-system-x86_64',
      ['-machine', 'none', '-nodefaults', '-display', 'none', '-qmp', `unix:${socket},server=on,wait=off`],
      { stdio: 'ignore' },
    );
    const exited = new Promise<number | null>((resolve) => qemu.once('exit', resolve));
    onTestFinished(() => {
      qemu.kill('SIGKILL');
    });
    // The monitor serves one client at a time: each connection is closed before the next.
    const raw = await waitFor(() => JsonSocket.connect(socket, 'monitor', 1_000).catch(() => undefined), {
      timeoutMs: 10_000,
      description: "QEMU's monitor socket",
    });
    await raw.next(5_000); // greeting
    await expect(raw.execute('no-such-command', undefined, 5_000)).rejects.toThrow(
      /monitor: no-such-command: .*CommandNotFound/,
    );
    raw.close();
    const qmp = await waitFor(() => Qmp.connect(socket, 1_000).catch(() => undefined), {
      timeoutMs: 10_000,
      description: "QEMU's monitor after the first client left",
    });
    expect(await qmp.status()).toBe('running');
    await qmp.quit();
    expect(await exited).toBe(0);
  });

  it('refuses a peer that sends something other than JSON, or lines without end, or nothing', async () => {
    const dir = await tempDirForTest();
    const garbage = await hostilePeer(dir, (write) => {
      write('{"QMP": {}}\nnot json at all\n');
    });
    const first = await JsonSocket.connect(garbage, 'the peer', 5_000);
    await first.next(1_000);
    await expect(first.next(1_000)).rejects.toThrow('the peer sent a line that is not JSON: not json at all');

    const dir2 = await tempDirForTest();
    const endless = await hostilePeer(dir2, (write) => {
      write('x'.repeat(4096));
    });
    const second = await JsonSocket.connect(endless, 'the peer', 5_000, 1024);
    await expect(second.next(2_000)).rejects.toThrow('the peer sent a line over 1024 bytes');

    const dir3 = await tempDirForTest();
    const silent = await hostilePeer(dir3, () => undefined);
    await expect(Qmp.connect(silent, 300)).rejects.toThrow("QEMU's monitor (QMP) did not answer within 300 ms");
    await expect(JsonSocket.connect(join(dir3, 'none.sock'), 'the peer', 1_000)).rejects.toThrow('ENOENT');
  });
});
