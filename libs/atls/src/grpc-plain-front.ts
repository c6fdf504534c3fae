import { createServer } from 'node:net';
import type { Server as NetServer } from 'node:net';
import type * as grpc from '@grpc/grpc-js';
import { GrpcFront } from './grpc-front.js';
import type { GrpcFrontHooks } from './grpc-front.js';

/**
 * Plaintext gRPC (a health port for the kubelet's probes) with what grpc-js's own listener lacks:
 * caps on the connections kept, and the end of those whose peer never closes its side. A
 * stranger's connections that sent nothing were otherwise kept for ever (red-team finding).
 */
export class GrpcPlainFront extends GrpcFront<NetServer> {
  constructor(grpcServer: grpc.Server, hooks: GrpcFrontHooks = {}) {
    super(grpcServer, (onEstablished) => createServer({ noDelay: true }, onEstablished), hooks);
  }
}
