import * as grpc from '@grpc/grpc-js';
import { HealthCheckResponse_ServingStatus, HealthService } from './gen/grpc/health/v1/health.js';
import type { HealthCheckRequest, HealthCheckResponse, HealthServer } from './gen/grpc/health/v1/health.js';

type Status = HealthCheckResponse_ServingStatus;

/**
 * The gRPC health service (what Kubernetes `grpc:` probes call). Services are registered with a
 * status; `Check` answers NOT_FOUND for unknown services, `Watch` streams every change.
 */
export class HealthStatus {
  private readonly statuses = new Map<string, Status>();
  private readonly watchers = new Map<
    string,
    Set<grpc.ServerWritableStream<HealthCheckRequest, HealthCheckResponse>>
  >();

  constructor(initial: Record<string, 'SERVING' | 'NOT_SERVING'> = { '': 'SERVING' }) {
    for (const [service, status] of Object.entries(initial))
      this.statuses.set(service, HealthCheckResponse_ServingStatus[status]);
  }

  set(service: string, status: 'SERVING' | 'NOT_SERVING'): void {
    const value = HealthCheckResponse_ServingStatus[status];
    this.statuses.set(service, value);
    for (const call of this.watchers.get(service) ?? []) call.write({ status: value });
  }

  addTo(server: grpc.Server): void {
    const implementation: HealthServer = {
      check: (call, callback) => {
        const status = this.statuses.get(call.request.service);
        if (status === undefined)
          callback({ code: grpc.status.NOT_FOUND, details: `unknown service "${call.request.service}"` });
        else callback(null, { status });
      },
      watch: (call) => {
        const service = call.request.service;
        call.write({ status: this.statuses.get(service) ?? HealthCheckResponse_ServingStatus.SERVICE_UNKNOWN });
        const set = this.watchers.get(service) ?? new Set();
        set.add(call);
        this.watchers.set(service, set);
        call.on('cancelled', () => set.delete(call));
      },
    };
    server.addService(HealthService, implementation);
  }
}
