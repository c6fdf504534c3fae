import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { bridgeGrpcLogs } from './grpc-log-bridge.js';
import { MemoryLogger } from './testing/memory-logger.js';

describe('bridgeGrpcLogs', () => {
  afterEach(() => {
    grpc.setLogger(console);
    grpc.setLogVerbosity(grpc.logVerbosity.ERROR);
  });

  it('routes grpc-js log lines into the logger with the right level', () => {
    const logger = new MemoryLogger();
    bridgeGrpcLogs(grpc, logger, true);
    grpc.experimental.log(grpc.logVerbosity.ERROR, 'subchannel failed');
    grpc.experimental.log(grpc.logVerbosity.INFO, 'picked subchannel');
    expect(logger.entries).toEqual([
      { level: 'error', message: 'subchannel failed', fields: { component: 'grpc' } },
      { level: 'info', message: 'picked subchannel', fields: { component: 'grpc' } },
    ]);
  });

  it('drops debug and info lines unless verbose', () => {
    const logger = new MemoryLogger();
    bridgeGrpcLogs(grpc, logger);
    grpc.experimental.log(grpc.logVerbosity.INFO, 'noise');
    grpc.experimental.log(grpc.logVerbosity.ERROR, 'real problem');
    expect(logger.entries.map((entry) => entry.message)).toEqual(['real problem']);
  });
});
