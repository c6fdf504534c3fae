import { connect as connectTcp } from 'node:net';
import type { Socket } from 'node:net';
import { connect as connectTls } from 'node:tls';
import { Metadata, credentials } from '@grpc/grpc-js';
import { SERVICE_CHANNEL_OPTIONS, serviceChannelCredentials } from '@constellation/atls';
import { MemoryLogger } from '@constellation/logger/testing';
import { HealthCheckResponse_ServingStatus, HealthClient, JoinServiceClient } from '@constellation/proto';
import { startSourceRelay, waitFor } from '@constellation/testing';
import type { SourceRelay } from '@constellation/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startJoinFixture } from './join-service.fixture.js';
import type { JoinFixture, SimulatedNode } from './join-service.fixture.js';

/*
 * A stranger (attacker 3) opens connections to every port of the JoinService and keeps them:
 * plain TCP that sends nothing to the kubelet's health port, TLS connections that make no call to
 * the join port, and HTTP requests whose headers never end to the metrics port. None of them was
 * bounded in number: each kept its socket and its buffers (about 40 KiB a TLS connection), so
 * enough of them used up the service's memory or descriptors, and joins with them. Now each port
 * keeps a bounded number per address and in all, and closes the rest at once; other addresses
 * (a node, the kubelet, Prometheus) are still served.
 */

const PER_ADDRESS = 16;
const FLOOD = 40;
let fixture: JoinFixture;
let node: SimulatedNode;
const relays: SourceRelay[] = [];
const sockets: Socket[] = [];

beforeAll(async () => {
  fixture = await startJoinFixture(new MemoryLogger(), { maxConnections: { perAddress: PER_ADDRESS, total: 64 } });
  node = await fixture.node('worker-51', '10.42.0.51');
});

afterEach(() => {
  for (const socket of sockets.splice(0)) socket.destroy();
});

afterAll(async () => {
  await Promise.all(relays.map((relay) => relay.close()));
  await node.stop();
  await fixture.close();
});

/** Opens `count` connections with `open` and says how many the service has closed after a moment. */
async function flood(count: number, open: (i: number) => Socket, kept: number): Promise<number> {
  let closed = 0;
  for (let i = 0; i < count; i++) {
    const socket = open(i);
    socket.on('error', () => undefined);
    socket.once('close', () => closed++);
    sockets.push(socket);
  }
  await waitFor(() => closed >= count - kept, {
    timeoutMs: 5_000,
    description: `the service to close all but ${String(kept)} of ${String(count)} connections`,
  });
  // What the service keeps, it keeps: nothing else closes in the next moment.
  await new Promise((resolve) => setTimeout(resolve, 300));
  return closed;
}

async function relayFrom(port: number, address: string): Promise<number> {
  const relay = await startSourceRelay(port, address);
  relays.push(relay);
  return relay.port;
}

describe("the JoinService's ports under a stranger's connection flood (attacker 3)", () => {
  it('keeps 8 silent plaintext connections per address on the health port; the kubelet still probes from its own', async () => {
    const { healthPort } = fixture.service;
    expect(await flood(FLOOD, () => connectTcp(healthPort, '127.0.0.1'), 8)).toBe(FLOOD - 8);
    const probe = new HealthClient(
      `127.0.0.1:${String(await relayFrom(healthPort, '127.0.0.2'))}`,
      credentials.createInsecure(),
    );
    try {
      const status = await new Promise((resolve, reject) => {
        probe.check(
          { service: 'constellation.join.v1.JoinService' },
          new Metadata(),
          { deadline: Date.now() + 5_000 },
          (err, res) => {
            if (err) reject(err);
            else resolve(res);
          },
        );
      });
      expect(status).toEqual({ status: HealthCheckResponse_ServingStatus.SERVING });
    } finally {
      probe.close();
    }
  }, 20_000);

  it('keeps 64 plaintext connections in all on the health port, from however many addresses', async () => {
    const { healthPort } = fixture.service;
    const closed = await flood(
      80,
      (i) => connectTcp({ port: healthPort, host: '127.0.0.1', localAddress: `127.0.1.${String(i + 1)}` }),
      64,
    );
    expect(closed).toBe(16);
  }, 20_000);

  it('keeps the configured TLS connections per address on the join port; a node from its own address joins', async () => {
    const { port } = fixture.service;
    const open = (): Socket =>
      connectTls({ port, host: '127.0.0.1', ALPNProtocols: ['h2'], rejectUnauthorized: false });
    expect(await flood(FLOOD, open, PER_ADDRESS)).toBe(FLOOD - PER_ADDRESS);
    const client = new JoinServiceClient(
      `127.0.0.1:${String(await relayFrom(port, '127.0.0.3'))}`,
      serviceChannelCredentials(),
      SERVICE_CHANNEL_OPTIONS,
    );
    try {
      const { ticket } = await node.requestJoin(client);
      expect(ticket.kubeletClientCert.length).toBeGreaterThan(0);
    } finally {
      client.close();
    }
  }, 30_000);

  it('keeps 8 connections per address on the metrics port, however slow their requests, and still serves Prometheus', async () => {
    const { metricsPort } = fixture.service;
    const slow = (): Socket => {
      const socket = connectTcp(metricsPort, '127.0.0.1');
      socket.write('GET /metrics HTTP/1.1\r\nHost: joinservice\r\n');
      return socket;
    };
    expect(await flood(FLOOD, slow, 8)).toBe(FLOOD - 8);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connectTcp({ port: metricsPort, host: '127.0.0.1', localAddress: '127.0.0.4' });
      let text = '';
      socket.on('data', (chunk: Buffer) => {
        text += chunk.toString('latin1');
      });
      socket.once('end', () => {
        resolve(text);
      });
      socket.once('error', reject);
      socket.write('GET /healthz HTTP/1.1\r\nHost: joinservice\r\nConnection: close\r\n\r\n');
    });
    expect(answer).toMatch(/^HTTP\/1\.1 200 OK/);
  }, 20_000);
});
