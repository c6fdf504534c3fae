import * as grpc from '@grpc/grpc-js';
import { bridgeGrpcLogs } from '@constellation/logger';
import type { Logger } from '@constellation/logger';
import { serveAgentOnControlPlane } from './attestation-agent.js';
import { Bootstrapper } from './bootstrapper.js';
import { BOOTSTRAPPER_DEFAULTS as DEFAULTS } from './config.js';
import type { BootstrapperConfig } from './config.js';
import { createNodeContext } from './create-node-context.js';
import { exitAction, rebootAction } from './fatal-action.js';
import type { OpenedNode } from './open-node.js';
import type { RecentLog } from './recent-log.js';
import { serveVerifyEndpoint } from './verify-endpoint.js';

/** Resolves on SIGTERM or SIGINT. */
function untilStopped(): Promise<void> {
  return new Promise<void>((resolve) => {
    process.once('SIGTERM', () => {
      resolve();
    });
    process.once('SIGINT', () => {
      resolve();
    });
  });
}

/** Where the program's output goes: the log, the recent log kept for the CLI, grpc-js's own lines. */
export interface RunOutput {
  logger: Logger;
  recentLog: RecentLog;
  grpcDebug: boolean;
}

/**
 * Bootstraps the opened node, then keeps the verify endpoint (and a control plane's attestation
 * agent) up. Loaded by the program once the node is open (see openNode).
 */
export async function runNode(config: BootstrapperConfig, node: OpenedNode, output: RunOutput): Promise<void> {
  const { logger, recentLog } = output;
  bridgeGrpcLogs(grpc, logger, output.grpcDebug);
  const { context, issuer } = await createNodeContext(config, node, logger, recentLog);
  const bootstrapper = new Bootstrapper(context, {
    initHost: config.initHost,
    initPort: config.initPort,
    recoveryPort: config.recoveryPort,
    joinInitialBackoffMs: DEFAULTS.joinInitialBackoffMs,
    joinMaxBackoffMs: config.joinBackoffMaxMs,
    requestTimeoutMs: DEFAULTS.requestTimeoutMs,
    fatal: config.onFatal === 'reboot' ? rebootAction(logger) : exitAction(logger),
  });
  const outcome = await bootstrapper.run(node.assessment);
  logger.info('bootstrapper done', { outcome });
  if (config.verifyPort < 0) {
    await context.tpm.close();
    return;
  }
  const endpoint = await serveVerifyEndpoint(issuer, config.initHost, config.verifyPort, logger);
  const agent = await serveAgentOnControlPlane(context);
  await untilStopped();
  await agent?.close();
  await endpoint.close();
  await context.tpm.close();
}
