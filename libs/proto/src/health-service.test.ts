import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HealthCheckResponse_ServingStatus, HealthClient } from './index.js';
import type { HealthCheckResponse } from './gen/grpc/health/v1/health.js';
import { HealthStatus } from './health-service.js';

let server: grpc.Server;
let client: HealthClient;
const health = new HealthStatus({ '': 'SERVING', 'svc.A': 'SERVING' });

beforeAll(async () => {
  server = new grpc.Server();
  health.addTo(server);
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => {
      if (err) reject(err);
      else resolve(p);
    });
  });
  client = new HealthClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
});

afterAll(() => {
  client.close();
  server.forceShutdown();
});

const check = (service: string): Promise<HealthCheckResponse> =>
  new Promise((resolve, reject) => {
    client.check({ service }, (err, res) => {
      if (err) reject(err);
      else resolve(res);
    });
  });

describe('grpc.health.v1 service', () => {
  it('answers Check for known services and NOT_FOUND for others', async () => {
    expect(await check('')).toEqual({ status: HealthCheckResponse_ServingStatus.SERVING });
    await expect(check('nope')).rejects.toMatchObject({ code: grpc.status.NOT_FOUND });
  });

  it('streams status changes to watchers', async () => {
    const stream = client.watch({ service: 'svc.A' });
    stream.on('error', () => undefined); // cancelling below ends the stream with CANCELLED
    const seen: HealthCheckResponse_ServingStatus[] = [];
    const done = new Promise<void>((resolve) => {
      stream.on('data', (res: HealthCheckResponse) => {
        seen.push(res.status);
        if (seen.length === 1) health.set('svc.A', 'NOT_SERVING');
        if (seen.length === 2) resolve();
      });
    });
    await done;
    stream.cancel();
    expect(seen).toEqual([HealthCheckResponse_ServingStatus.SERVING, HealthCheckResponse_ServingStatus.NOT_SERVING]);
  });
});
