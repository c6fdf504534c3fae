import { spawn } from 'node:child_process';
import { connect, createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import { freePort } from '@constellation/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { listeningCopies } from './listening-copies.js';

const CONNECTIONS = 120;
const open: Server[] = [];
const clients: Socket[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) client.destroy();
  await Promise.all(open.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

const portOf = (server: Server): number => {
  const address = server.address();
  return typeof address === 'object' && address !== null ? address.port : 0;
};

/** Blocks the event loop for `ms`, as a busy service's turn does. */
const busyFor = (ms: number): void => {
  const until = performance.now() + ms;
  while (performance.now() < until);
};

/** A process that opens `count` connections to `port` and holds them until it is killed. */
const CONNECTOR = `
const net = require('node:net');
const [port, count] = JSON.parse(process.argv[1]);
for (let i = 0; i < count; i++) net.connect(port, '127.0.0.1').on('error', () => {});
setTimeout(() => {}, 60000);
`;

/**
 * Has another process open CONNECTIONS connections to `port` while this process's event loop is
 * blocked, so that they all wait in the kernel's accept queue; then turns the loop, each turn busy
 * for 5 ms as a loaded service's is, and returns how many connections each turn accepted.
 */
async function acceptedPerTurn(servers: Server[], port: number): Promise<number[]> {
  let turn = 0;
  let accepted = 0;
  const perTurn = new Map<number, number>();
  for (const server of servers) {
    server.on('connection', (socket: Socket) => {
      accepted++;
      perTurn.set(turn, (perTurn.get(turn) ?? 0) + 1);
      clients.push(socket);
    });
  }
  const connector = spawn(process.execPath, ['-e', CONNECTOR, JSON.stringify([port, CONNECTIONS])], {
    stdio: 'ignore',
  });
  try {
    busyFor(1_500); // the connector starts and connects meanwhile; nothing is accepted
    const deadline = Date.now() + 10_000;
    while (accepted < CONNECTIONS && Date.now() < deadline) {
      turn++;
      busyFor(5);
      await new Promise((resolve) => setImmediate(resolve));
    }
  } finally {
    connector.kill();
  }
  expect(accepted).toBe(CONNECTIONS);
  return [...perTurn.values()];
}

/**
 * A process that keeps trying to connect to `port` from `loops` loops, refused or not, for up to
 * 20 s, and holds every connection it gets open: nodes retrying a JoinService that restarts.
 */
const HAMMER = `
const net = require('node:net');
const [port, loops] = JSON.parse(process.argv[1]);
const until = Date.now() + 20000;
const held = [];
const attempt = () => {
  if (Date.now() > until) return;
  const socket = net.connect(port, '127.0.0.1');
  socket.on('connect', () => { held.push(socket); setImmediate(attempt); });
  socket.on('error', () => setImmediate(attempt));
};
for (let i = 0; i < loops; i++) attempt();
process.send('started');
setTimeout(() => {}, 20000);
`;

/** Runs `body` on a free port while HAMMER keeps connecting to it from 16 loops. */
async function whileHammered<T>(body: (port: number) => Promise<T>): Promise<T> {
  const port = await freePort();
  const hammer = spawn(process.execPath, ['-e', HAMMER, JSON.stringify([port, 16])], {
    stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
  });
  try {
    await new Promise((resolve) => hammer.once('message', resolve));
    return await body(port);
  } finally {
    hammer.kill();
  }
}

describe('copies of a listening socket', () => {
  it('are handed over while clients keep connecting (a restart in the middle of a storm)', async () => {
    await whileHammered(async (port) => {
      // Connections the helper process accepted before it handed its socket over used to keep it
      // from leaving (its server's close waits for them): no copies within 10 s, and the service
      // restarted mid-storm failed to start (join-storm-faults.test.ts, seen in CI).
      const copies = await listeningCopies(port, '127.0.0.1', 8);
      open.push(...copies);
      expect(copies).toHaveLength(8);
      expect(new Set(copies.map(portOf))).toEqual(new Set([port]));
    });
  }, 30_000);

  it('give every connection they accept to the handler, also those accepted while they are handed over', async () => {
    await whileHammered(async (port) => {
      const handled = new Set<Socket>();
      const copies = await listeningCopies(port, '127.0.0.1', 8, (socket) => {
        handled.add(socket);
        clients.push(socket);
      });
      open.push(...copies);
      // A copy accepts as soon as it arrives. A connection it took before anything listened for
      // its 'connection' event was read into and never answered: the node waited for its call's
      // deadline, and the socket kept a stopped JoinService alive (seen after SIGTERM in CI).
      await new Promise((resolve) => setTimeout(resolve, 200));
      // Counted in one turn of the loop: no connection is accepted between the two counts.
      const handledNow = [...handled].filter((socket) => !socket.destroyed).length;
      const accepted = await Promise.all(
        copies.map(
          (copy) =>
            new Promise<number>((resolve, reject) => {
              copy.getConnections((err, count) => {
                if (err) reject(err);
                else resolve(count);
              });
            }),
        ),
      );
      expect(accepted.reduce((a, b) => a + b, 0)).toBe(handledNow);
      expect(handledNow).toBeGreaterThan(0);
    });
  }, 30_000);

  it('a busy event loop accepts one connection per turn from a single listening socket (Node 20)', async () => {
    const server = createServer();
    open.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const perTurn = await acceptedPerTurn([server], portOf(server));
    // The limit the copies work around: one per turn, so a storm waits in the kernel's queue.
    expect(Math.max(...perTurn)).toBe(1);
  }, 30_000);

  it('accept as many connections per turn as there are copies, all on one port', async () => {
    const copies = await listeningCopies(0, '127.0.0.1', 8);
    open.push(...copies);
    const ports = new Set(copies.map(portOf));
    expect(ports.size).toBe(1);
    const perTurn = await acceptedPerTurn(copies, portOf(copies[0] as Server));
    expect(Math.max(...perTurn)).toBeGreaterThan(4);
    expect(perTurn.length).toBeLessThan(CONNECTIONS / 4);
  }, 30_000);

  it('refuse a port already in use, naming it and the reason', async () => {
    const taken = createServer();
    open.push(taken);
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = portOf(taken);
    await expect(listeningCopies(port, '127.0.0.1', 4)).rejects.toThrow(
      new RegExp(`cannot listen on 127.0.0.1:${port}: .*EADDRINUSE`),
    );
  }, 30_000);

  it('leave nothing listening once every copy is closed (the helper process is gone)', async () => {
    const copies = await listeningCopies(0, '127.0.0.1', 3);
    const port = portOf(copies[0] as Server);
    await Promise.all(copies.map((copy) => new Promise((resolve) => copy.close(resolve))));
    const refused = await new Promise<string>((resolve) => {
      const client = connect(port, '127.0.0.1', () => {
        client.destroy();
        resolve('connected');
      });
      client.on('error', (err: NodeJS.ErrnoException) => {
        resolve(err.code ?? err.message);
      });
    });
    expect(refused).toBe('ECONNREFUSED');
  }, 30_000);
});
