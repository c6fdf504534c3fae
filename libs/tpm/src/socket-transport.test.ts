import { createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { TpmTransportError } from './errors.js';
import { SocketTransport } from './socket-transport.js';

/** A loopback server that answers each connection with `respond`; stands in for a misbehaving TPM. */
async function fakeTpm(respond: (socket: Socket, command: Buffer) => void): Promise<{ server: Server; port: number }> {
  const server = createServer((socket) => {
    socket.on('data', (command: Buffer) => {
      respond(socket, command);
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return { server, port: typeof address === 'object' && address !== null ? address.port : 0 };
}

const command = Buffer.from('80010000000c0000017b0010', 'hex');

describe('SocketTransport failure handling', () => {
  const servers: Server[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
  });

  it('times out when the TPM never answers', async () => {
    const { server, port } = await fakeTpm(() => undefined);
    servers.push(server);
    const transport = new SocketTransport({ host: '127.0.0.1', port, timeoutMs: 100 });
    await expect(transport.send(command)).rejects.toThrow(/no response within 100 ms/);
    await transport.close();
  });

  it('rejects a response whose header claims an absurd size', async () => {
    const { server, port } = await fakeTpm((socket) => socket.write(Buffer.from('8001ffffffff00000000', 'hex')));
    servers.push(server);
    const transport = new SocketTransport({ host: '127.0.0.1', port, timeoutMs: 1_000 });
    await expect(transport.send(command)).rejects.toThrow(/response header claims 4294967295 bytes/);
    await transport.close();
  });

  it('rejects extra bytes after a response and a connection closed mid-response', async () => {
    const extra = await fakeTpm((socket) => socket.write(Buffer.from('80010000000a00000000ffff', 'hex')));
    const cut = await fakeTpm((socket) => socket.end(Buffer.from('80010000', 'hex')));
    servers.push(extra.server, cut.server);
    const t1 = new SocketTransport({ host: '127.0.0.1', port: extra.port, timeoutMs: 1_000 });
    await expect(t1.send(command)).rejects.toThrow(/2 bytes beyond the response/);
    const t2 = new SocketTransport({ host: '127.0.0.1', port: cut.port, timeoutMs: 1_000 });
    await expect(t2.send(command)).rejects.toThrow(/connection closed during a command/);
    await Promise.all([t1.close(), t2.close()]);
  });

  it('reports a refused connection as a transport error and refuses work after close', async () => {
    const { server, port } = await fakeTpm(() => undefined);
    await new Promise((resolve) => server.close(resolve));
    const transport = new SocketTransport({ host: '127.0.0.1', port, timeoutMs: 1_000 });
    await expect(transport.send(command)).rejects.toBeInstanceOf(TpmTransportError);
    await transport.close();
    await expect(transport.send(command)).rejects.toThrow(/transport is closed/);
  });

  it('assembles responses that arrive in pieces', async () => {
    const { server, port } = await fakeTpm((socket) => {
      const response = Buffer.from('800100000010000000000004deadbeef', 'hex');
      socket.write(response.subarray(0, 3));
      setTimeout(() => socket.write(response.subarray(3)), 10);
    });
    servers.push(server);
    const transport = new SocketTransport({ host: '127.0.0.1', port, timeoutMs: 1_000, keepConnection: true });
    expect((await transport.send(command)).toString('hex')).toBe('800100000010000000000004deadbeef');
    await transport.close();
  });
});
