import { join } from 'node:path';
import { MAX_EVENT_LOG_BYTES, TpmIssuer, unrootedVariantWarning } from '@constellation/attestation';
import type { Issuer } from '@constellation/attestation';
import type { ServiceCheck } from '@constellation/atls';
import type { Logger } from '@constellation/logger';
import { NodeLock, openNodeEventLog } from '@constellation/nodelock';
import type { NodeEventLog } from '@constellation/nodelock';
import { BOOTSTRAPPER_DEFAULTS } from './config.js';
import type { BootstrapperConfig } from './config.js';
import { joinServiceCheck } from './join-service-check.js';
import { MetadataClient } from './metadata-client.js';
import type { NodeContext } from './node-context.js';
import type { OpenedNode } from './open-node.js';
import type { RecentLog } from './recent-log.js';
import { shellCommand } from './shell-command.js';
import { stateMounter } from './state-mount.js';

/** The node's attestation issuer: rooted in the TPM's EK certificate unless configured otherwise. */
async function createIssuer(
  { tpm, endorsementKeys }: Pick<OpenedNode, 'tpm' | 'endorsementKeys'>,
  config: BootstrapperConfig,
  logger: Logger,
  tcgEventLog: () => Buffer | undefined,
): Promise<Issuer> {
  if (config.attestationVariant === 'qemu-vtpm') {
    const issuer = new TpmIssuer(tpm, { tcgEventLog });
    logger.warn(unrootedVariantWarning(issuer.variant));
    return issuer;
  }
  const issuer = await TpmIssuer.rooted(tpm, {
    tcgEventLog,
    ekIntermediates: config.ekIntermediateCertificates,
    ...(endorsementKeys === undefined ? {} : { endorsementKeys }),
  });
  logger.info('attesting with the TPM endorsement key', {
    variant: issuer.variant.name,
    akName: issuer.rooted?.akName.toString('hex'),
  });
  return issuer;
}

/** Node preparation before kubeadm, when the node image names a manifest URL. */
function nodePreparation(config: BootstrapperConfig, logger: Logger): Pick<NodeContext, 'prepareNode'> {
  const manifestUrlTemplate = config.manifestUrl;
  if (manifestUrlTemplate === undefined) return {};
  const defaults = BOOTSTRAPPER_DEFAULTS.nodePreparation;
  return {
    prepareNode: async (kubernetesVersion: string) => {
      // Loaded when a node prepares itself, not at start: the InitServer listens sooner and smaller.
      const { prepareNode } = await import('@constellation/node-prep');
      await prepareNode({
        root: config.root,
        osReleasePath: defaults.osReleasePath,
        requestVersion: kubernetesVersion,
        ...(config.minimumKubernetesVersion === undefined ? {} : { minimumVersion: config.minimumKubernetesVersion }),
        seedFile: defaults.seedFile,
        manifestUrlTemplate,
        verifySignatures: config.verifySignatures,
        keyringPath: config.keyring,
        kubeletEnvPath: defaults.kubeletEnvPath,
        // The bootstrapper runs before the kubelet and never reboots the node for an OS update.
        reboot: () => Promise.resolve(),
        retry: defaults.retry,
        apiRetry: defaults.apiRetry,
        logger,
      });
    },
  };
}

/**
 * Builds what every bootstrap path shares on the opened node (see openNode), while its assessment
 * goes on. The TPM connection is closed again, once the assessment has ended, when building the
 * attestation parts fails.
 */
export async function createNodeContext(
  config: BootstrapperConfig,
  node: OpenedNode,
  logger: Logger,
  recentLog: RecentLog,
): Promise<{ context: NodeContext; issuer: Issuer }> {
  const { tpm, disk, paths, assessment } = node;
  const metadata = new MetadataClient(config.metadataUrl, config.nodeName);
  let issuer: Issuer;
  let checkJoinService: ServiceCheck | undefined;
  let eventLog: NodeEventLog | undefined;
  try {
    // Read at each attestation, which comes after the log is open below.
    issuer = await createIssuer(node, config, logger, () => eventLog?.tcgEventLog());
    // The boot's log and the bootstrapper's own: every attestation carries them (docs/eventlog.md).
    eventLog = await openNodeEventLog({
      bootLog: join(config.root, config.eventLog),
      runtimeLog: join(config.root, config.runtimeEventLog),
      tpm,
      maxBytes: MAX_EVENT_LOG_BYTES,
      logger,
    });
    checkJoinService =
      config.attestationVariant === 'tpm2-ek'
        ? await joinServiceCheck({
            tpm,
            metadata,
            ekRoots: config.ekRootCertificates,
            ekIntermediates: config.ekIntermediateCertificates,
            measuredPcrs: config.measuredPcrs,
            logger,
          })
        : undefined;
  } catch (err) {
    await assessment.catch(() => undefined);
    await tpm.close();
    throw err;
  }
  const context: NodeContext = {
    paths,
    tpm,
    issuer,
    disk,
    lock: new NodeLock(tpm, { eventLog: eventLog.runtime }),
    metadata,
    ...(checkJoinService === undefined ? {} : { joinServiceCheck: checkJoinService }),
    logger,
    recentLog,
    kubeadm: {
      program: config.kubeadm,
      env: process.env,
      timeoutMs: BOOTSTRAPPER_DEFAULTS.kubeadmTimeoutMs,
      node: {
        ...(config.kubeadmPatches === undefined ? {} : { patchesDir: config.kubeadmPatches }),
        ignorePreflightErrors: config.kubeadmIgnorePreflightErrors,
        imagePullPolicy: config.imagePullPolicy,
        ...(config.kubeProxyFields === undefined ? {} : { kubeProxy: config.kubeProxyFields }),
      },
    },
    apiServerBindPort: config.apiServerBindPort,
    defaultKubernetesVersion: config.defaultKubernetesVersion,
    ...(config.minimumKubernetesVersion === undefined
      ? {}
      : { minimumKubernetesVersion: config.minimumKubernetesVersion }),
    ...(config.stateMount === undefined ? {} : { mountStateDisk: stateMounter(disk, config.root, config.stateMount) }),
    startKubelet: shellCommand(config.kubeletStartCommand),
    ...nodePreparation(config, logger),
  };
  return { context, issuer };
}
