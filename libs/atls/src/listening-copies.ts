import { spawn } from 'node:child_process';
import type { Server as NetServer, Socket } from 'node:net';

/**
 * The child's program: listen, send the listening socket `copies` times, then leave. Between its
 * listen and its close the child accepts connections itself (a service restarted while nodes
 * retry gets some): it closes them at once, so the node retries on a copy, because its server's
 * close waits for every connection it accepted, and one held open kept it from leaving.
 */
const CHILD = `
const net = require('node:net');
const [host, port, copies] = JSON.parse(process.argv[1]);
const server = net.createServer({ pauseOnConnect: true }, (socket) => socket.destroy());
server.once('error', (err) => { process.send({ error: err.message }, () => process.exit(1)); });
server.listen(port, host, () => {
  let sent = 0;
  for (let i = 0; i < copies; i++) {
    process.send({ port: server.address().port }, server, { keepOpen: true }, () => {
      if (++sent === copies) server.close(() => process.disconnect());
    });
  }
});
`;

/** How long the child may take to hand its copies over. */
const COPIES_TIMEOUT_MS = 10_000;

/**
 * `copies` listening servers on one TCP socket (`host:port`, port 0 picks one), each with its own
 * file descriptor, so a busy event loop accepts `copies` connections per turn instead of one.
 * Node 20's libuv accepts one connection per loop turn per listening descriptor (measured: a loop
 * that turns every 10 ms took 300 connections in 300 turns), and a storm's connections then wait
 * in the kernel's accept queue, where nothing of the service sees them. Node 20 has no way to
 * duplicate a descriptor nor SO_REUSEPORT (22.12's `reusePort`), but passing a listening server
 * to another process duplicates its descriptor: a short-lived child process listens and sends its
 * server back `copies` times over IPC, then exits.
 */
export function listeningCopies(
  port: number,
  host: string,
  copies: number,
  onConnection?: (socket: Socket) => void,
): Promise<NetServer[]> {
  return new Promise<NetServer[]>((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', CHILD, JSON.stringify([host, port, copies])], {
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      // Nothing of the service's environment (NODE_OPTIONS, say): the child only listens.
      env: {},
    });
    const servers: NetServer[] = [];
    // The helper's exit follows a failure (it is killed, or leaves after reporting its error).
    let settled = false;
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-2_000);
    });
    const timer = setTimeout(() => {
      fail(new Error(`no listening socket from the helper process within ${COPIES_TIMEOUT_MS} ms`));
    }, COPIES_TIMEOUT_MS);
    const fail = (err: Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      for (const server of servers) server.close();
      child.kill();
      reject(err);
    };
    child.on('message', (message: { error?: string }, handle: unknown) => {
      if (message.error !== undefined) {
        fail(new Error(`cannot listen on ${host}:${port}: ${message.error}`));
        return;
      }
      const server = handle as NetServer;
      // A copy accepts from the moment it arrives, before the others and the helper's exit: a
      // connection it took with nothing listening would be read into and never answered.
      if (onConnection !== undefined) server.on('connection', onConnection);
      servers.push(server);
    });
    child.once('error', fail);
    // Done once the child is gone: then only the copies hold the socket, and closing them stops
    // all listening on the port.
    child.once('exit', (code: number | null) => {
      if (settled) return;
      if (servers.length < copies) {
        fail(new Error(`the helper process that listens exited (${String(code)}) before handing over: ${stderr}`));
        return;
      }
      settled = true;
      clearTimeout(timer);
      resolve(servers);
    });
  });
}
