import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { acceptQueueLength } from './accept-queue.js';

// A listener whose process does not accept: its loop is busy, as a JoinService's is in a storm.
const BUSY_LISTENER = `
const server = require('node:net').createServer();
server.listen(0, '127.0.0.1', () => {
  console.log(server.address().port);
  const until = Date.now() + 20000;
  while (Date.now() < until) {}
});`;

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

async function busyListener(): Promise<number> {
  const child = spawn(process.execPath, ['-e', BUSY_LISTENER], { stdio: ['ignore', 'pipe', 'inherit'] });
  cleanups.push(() => {
    child.kill('SIGKILL');
  });
  const line = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error('the listener did not print its port within 10 s'));
    }, 10_000);
    createInterface({ input: child.stdout }).once('line', (text) => {
      clearTimeout(timer);
      resolve(text);
    });
  });
  return Number(line);
}

describe('acceptQueueLength', () => {
  it('counts the connections the kernel holds for a listener that has not accepted them', async () => {
    const port = await busyListener();
    expect(await acceptQueueLength(port)).toBe(0);
    const sockets: Socket[] = [];
    cleanups.push(() => {
      for (const socket of sockets) socket.destroy();
    });
    for (let i = 0; i < 5; i++) {
      // The kernel completes the handshake itself: connect succeeds with nobody accepting.
      const socket = connect(port, '127.0.0.1');
      sockets.push(socket);
      await new Promise<void>((resolve, reject) => {
        socket.once('connect', resolve).once('error', reject);
      });
    }
    expect(await acceptQueueLength(port)).toBe(5);
    // Another port's queue is not this one's.
    expect(await acceptQueueLength(port === 65535 ? 1 : port + 1)).toBe(0);
  });
});
