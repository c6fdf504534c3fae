import { defaultCluster, defaultInit, defaultJoin } from './config-defaults.js';
import type { ResolvedCluster, ResolvedInit, ResolvedJoin, ResolvedNodeRegistration } from './config-defaults.js';
import { ConfigError, parseKubeadmConfig } from './config-schema.js';
import { DEFAULT_KUBELET_CONFIGURATION } from './kubelet-config-map.js';
import type { KubeletConfiguration } from './kubelet-config-map.js';
import { klogWarning } from './config-schema.js';
import type { Warn } from './config-schema.js';
import {
  aggregate,
  ignorePreflightErrorsError,
  initSkipPhaseError,
  joinSkipPhaseError,
  releaseVersion,
  validateInit,
  validateJoin,
} from './config-validation.js';

/*
 * kubeadm's configuration loading for init and join (cmd/kubeadm/app/util/config
 * initconfiguration.go, joinconfiguration.go): decode, static defaults, dynamic defaults,
 * validation. Warnings go to `warn`; anything kubeadm refuses is a ConfigError with its wording.
 */

const API = 'kubeadm.k8s.io/v1beta4';

/** SetNodeRegistrationDynamicDefaults: a CRI socket without URL scheme gets "unix://", with a warning. */
function withSocketScheme(registration: ResolvedNodeRegistration, warn: Warn): ResolvedNodeRegistration {
  if (!registration.criSocket.startsWith('/')) return registration;
  warn(
    klogWarning(
      'initconfiguration.go:120',
      `Usage of CRI endpoints without URL scheme is deprecated and can cause kubelet errors in the future. Automatically prepending scheme "unix" to the "criSocket" with value "${registration.criSocket}". Please update your configuration!`,
    ),
  );
  return { ...registration, criSocket: `unix://${registration.criSocket}` };
}

export function loadInitConfig(
  text: string,
  warn: Warn,
): { init: ResolvedInit; cluster: ResolvedCluster; kubelet: KubeletConfiguration } {
  const docs = parseKubeadmConfig(text, warn);
  // documentMapToInitConfiguration: without either there is nothing to initialise from, whatever
  // else the file holds (an empty file, or a KubeletConfiguration alone, too).
  if (docs.init === undefined && docs.cluster === undefined)
    throw new ConfigError('no InitConfiguration or ClusterConfiguration kind was found in the YAML file');
  const defaulted = defaultInit(docs.init ?? { apiVersion: API, kind: 'InitConfiguration' });
  const init = { ...defaulted, nodeRegistration: withSocketScheme(defaulted.nodeRegistration, warn) };
  const cluster = defaultCluster(docs.cluster ?? { apiVersion: API, kind: 'ClusterConfiguration' });
  const version = releaseVersion(cluster.kubernetesVersion);
  if (version === undefined) {
    throw new ConfigError(
      /^(stable|latest|ci)/.test(cluster.kubernetesVersion)
        ? `unable to fetch the Kubernetes version for label "${cluster.kubernetesVersion}": the kubeadm stand-in has no network; set kubernetesVersion`
        : `version "${cluster.kubernetesVersion}" doesn't match patterns for neither semantic version nor labels (stable, latest, ...)`,
    );
  }
  const errors = validateInit(init, cluster);
  if (errors.length > 0) throw new ConfigError(aggregate(errors));
  const skip = initSkipPhaseError(init.skipPhases);
  if (skip !== undefined) throw new ConfigError(skip);
  const ignore = ignorePreflightErrorsError(init.nodeRegistration.ignorePreflightErrors);
  if (ignore !== undefined) throw new ConfigError(ignore);
  return {
    init,
    cluster: { ...cluster, kubernetesVersion: version },
    kubelet: docs.kubelet ?? DEFAULT_KUBELET_CONFIGURATION,
  };
}

export function loadJoinConfig(text: string, warn: Warn): ResolvedJoin {
  // documentMapToJoinConfiguration reads the JoinConfiguration only: a KubeletConfiguration (or
  // any other document) beside it is skipped silently; the joining kubelet's configuration comes
  // from the cluster's kubelet-config ConfigMap.
  const docs = parseKubeadmConfig(text, warn, ['JoinConfiguration']);
  if (docs.join === undefined) throw new ConfigError('no JoinConfiguration kind was found in the YAML file');
  const defaulted = defaultJoin(docs.join);
  const join = { ...defaulted, nodeRegistration: withSocketScheme(defaulted.nodeRegistration, warn) };
  const errors = validateJoin(join);
  if (errors.length > 0) throw new ConfigError(aggregate(errors));
  const skip = joinSkipPhaseError(join.skipPhases);
  if (skip !== undefined) throw new ConfigError(skip);
  const ignore = ignorePreflightErrorsError(join.nodeRegistration.ignorePreflightErrors);
  if (ignore !== undefined) throw new ConfigError(ignore);
  return join;
}
