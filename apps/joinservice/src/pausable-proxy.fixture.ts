// Test fixture: a TCP proxy that can stop answering, to play an API server that hangs (accepts
// connections, reads requests, says nothing) without touching the server behind it. TLS passes
// through it: clients keep the API server's certificate (kube-apiserver's names 127.0.0.1) and
// their own credentials, client certificates included.
import { connect, createServer } from 'node:net';
import type { Server, Socket } from 'node:net';

export class PausableProxy {
  private readonly server: Server;
  private readonly pairs = new Set<{ client: Socket; upstream: Socket }>();
  private paused = false;
  port = 0;
  private readonly protocol: string;
  /** Connections accepted so far (what a client's connection reuse shows in). */
  connections = 0;

  private constructor(upstreamHost: string, upstreamPort: number, protocol: string) {
    this.protocol = protocol;
    this.server = createServer((client) => {
      this.connections++;
      const upstream = connect(upstreamPort, upstreamHost);
      const pair = { client, upstream };
      this.pairs.add(pair);
      client.pipe(upstream);
      upstream.pipe(client);
      if (this.paused) this.hold(pair);
      const drop = (): void => {
        this.pairs.delete(pair);
        client.destroy();
        upstream.destroy();
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
    });
  }

  static async start(upstreamUrl: string): Promise<PausableProxy> {
    const url = new URL(upstreamUrl);
    const proxy = new PausableProxy(url.hostname, Number(url.port), url.protocol);
    await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve));
    const address = proxy.server.address();
    proxy.port = typeof address === 'object' && address !== null ? address.port : 0;
    return proxy;
  }

  /** The upstream's scheme at the proxy's address. */
  get url(): string {
    return `${this.protocol}//127.0.0.1:${this.port}`;
  }

  /** Stops forwarding in both directions: callers see an API server that accepts and never answers. */
  pause(): void {
    this.paused = true;
    for (const pair of this.pairs) this.hold(pair);
  }

  /** Forwards again, what was held included. */
  resume(): void {
    this.paused = false;
    for (const { client, upstream } of this.pairs) {
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
      upstream.resume();
    }
  }

  async close(): Promise<void> {
    for (const { client, upstream } of this.pairs) {
      client.destroy();
      upstream.destroy();
    }
    await new Promise<void>((resolve) =>
      this.server.close(() => {
        resolve();
      }),
    );
  }

  private hold({ client, upstream }: { client: Socket; upstream: Socket }): void {
    client.unpipe(upstream);
    upstream.unpipe(client);
    client.pause();
    upstream.pause();
  }
}
