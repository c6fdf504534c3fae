import { connect, createServer } from 'node:net';
import type { Server, Socket } from 'node:net';

export interface Backend {
  host: string;
  port: number;
}

const CONNECT_TIMEOUT_MS = 2_000;

function dial(backend: Backend): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: backend.host, port: backend.port });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`${backend.host}:${backend.port} did not answer within ${CONNECT_TIMEOUT_MS} ms`));
    }, CONNECT_TIMEOUT_MS);
    socket.once('connect', () => {
      clearTimeout(timer);
      resolve(socket);
    });
    socket.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

/**
 * The cloud's load balancer in front of the control planes' API servers: a TCP pass-through to
 * the control planes in turn, skipping one that refuses the connection (a rebooting node). The
 * control-plane endpoint that kubeadm puts into every kubeconfig is this address, so the cluster
 * keeps answering while one control plane is down, as behind a cloud's load balancer. Only the API
 * server goes through it: the JoinService needs each joining node's own address, and nodes try
 * every control plane for it themselves.
 */
export async function startApiLoadBalancer(listen: Backend, backends: readonly Backend[]): Promise<Server> {
  let next = 0;
  const server = createServer((client) => {
    client.pause();
    client.on('error', () => client.destroy());
    void (async () => {
      const start = next++;
      for (let i = 0; i < backends.length; i++) {
        const backend = backends[(start + i) % backends.length];
        if (backend === undefined) continue;
        const upstream = await dial(backend).catch(() => undefined);
        if (upstream === undefined) continue;
        upstream.on('error', () => client.destroy());
        client.on('close', () => upstream.destroy());
        upstream.on('close', () => client.destroy());
        client.pipe(upstream);
        upstream.pipe(client);
        client.resume();
        return;
      }
      client.destroy();
    })();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, resolve);
  });
  return server;
}

/** `host:port=backend:port,backend:port` as the hidden serve-metadata command takes it. */
export function parseLoadBalancerSpec(spec: string): { listen: Backend; backends: Backend[] } {
  const address = (text: string): Backend => {
    const colon = text.lastIndexOf(':');
    const port = Number(text.slice(colon + 1));
    if (colon <= 0 || !Number.isInteger(port) || port < 1 || port > 65535)
      throw new Error(`expected host:port, got "${text}"`);
    return { host: text.slice(0, colon), port };
  };
  const [listen, backends] = spec.split('=');
  if (listen === undefined || backends === undefined)
    throw new Error(`expected host:port=backend:port,…, got "${spec}"`);
  return { listen: address(listen), backends: backends.split(',').map(address) };
}
