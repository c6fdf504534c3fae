import { randomInt } from 'node:crypto';
import { hostname } from 'node:os';
import type {
  Arg,
  BootstrapTokenConfig,
  ClusterConfiguration,
  InitConfiguration,
  JoinConfiguration,
  TaintConfig,
} from './config-schema.js';

/*
 * kubeadm's static defaults (cmd/kubeadm/app/apis/kubeadm/v1beta4/defaults.go,
 * cmd/kubeadm/app/apis/bootstraptoken/v1/defaults.go) and the dynamic defaults applied at run
 * time (cmd/kubeadm/app/util/config/initconfiguration.go SetInitDynamicDefaults: a random token
 * when none is given, the host name as node name, the advertise address as endpoint).
 */

/** v1beta4 DefaultAPIBindPort. */
export const DEFAULT_BIND_PORT = 6443;
/** bootstraptoken/v1 DefaultTokenDuration: 24 hours. */
export const DEFAULT_TOKEN_TTL_MS = 24 * 3600_000;
/** bootstraptoken/v1 DefaultTokenUsages (bootstrapapi.KnownTokenUsages). */
export const DEFAULT_TOKEN_USAGES = ['signing', 'authentication'];
/** bootstraptoken/v1 DefaultTokenGroups. */
export const DEFAULT_TOKEN_GROUPS = ['system:bootstrappers:kubeadm:default-node-token'];
/** constants.DefaultCRISocket on Linux. */
const DEFAULT_CRI_SOCKET = 'unix:///var/run/containerd/containerd.sock';
/** v1beta4 DefaultDiscoveryTimeout, and the default TLS bootstrap timeout (constants.TLSBootstrapTimeout). */
const DEFAULT_DISCOVERY_MS = 5 * 60_000;
const DEFAULT_TLS_BOOTSTRAP_MS = 5 * 60_000;
/** v1beta4 DefaultKubernetesAPICallTimeout: how long kubeadm retries an API call (PatchNode among them). */
const DEFAULT_KUBERNETES_API_CALL_MS = 60_000;
/** constants.KubernetesAPICallRetryInterval: how often kubeadm tries such a call again. */
export const KUBERNETES_API_CALL_RETRY_MS = 500;

/** A core/v1 Taint as kubeadm hands it on (key, effect; value only when set). */
export interface Taint {
  key: string;
  value?: string;
  effect: string;
  timeAdded?: string;
}

/** constants.ControlPlaneTaint: node-role.kubernetes.io/control-plane:NoSchedule. */
export const CONTROL_PLANE_TAINT: Taint = { key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' };

export interface ResolvedBootstrapToken {
  id: string;
  secret: string;
  description: string;
  /** Absolute expiry; undefined for a token that never expires (ttl 0). */
  expires: Date | undefined;
  usages: string[];
  groups: string[];
}

export interface ResolvedNodeRegistration {
  name: string;
  criSocket: string;
  kubeletExtraArgs: Arg[];
  /** kubeletExtraArgs node-ip, when given. */
  nodeIp: string | undefined;
  /** Preflight checks to report as warnings only, lower-cased (ValidateIgnorePreflightErrors). */
  ignorePreflightErrors: string[];
  /** After SetNodeRegistrationDynamicDefaults: the control-plane taint when unset on a control plane. */
  taints: Taint[];
}

export interface ResolvedInit {
  nodeRegistration: ResolvedNodeRegistration;
  advertiseAddress: string;
  bindPort: number;
  certificateKey: string;
  bootstrapTokens: ResolvedBootstrapToken[];
  /** The tokens as written (before the random token was drawn), for validation. */
  bootstrapTokenConfigs: BootstrapTokenConfig[];
  skipPhases: string[];
  kubernetesApiCallMs: number;
}

export interface ResolvedCluster {
  clusterName: string;
  kubernetesVersion: string;
  controlPlaneEndpoint: string;
  serviceSubnet: string;
  podSubnet: string;
  dnsDomain: string;
  certSANs: string[];
  extraArgs: { apiServer: Arg[]; controllerManager: Arg[]; scheduler: Arg[] };
}

export interface ResolvedJoin {
  nodeRegistration: ResolvedNodeRegistration;
  apiServerEndpoint: string;
  token: string;
  tlsBootstrapToken: string;
  caCertHashes: string[];
  unsafeSkipCAVerification: boolean;
  controlPlane: { advertiseAddress: string; bindPort: number; certificateKey: string } | undefined;
  skipPhases: string[];
  discoveryTimeoutMs: number;
  tlsBootstrapTimeoutMs: number;
  kubernetesApiCallMs: number;
}

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';
const random = (length: number): string =>
  Array.from({ length }, () => ALPHABET[randomInt(ALPHABET.length)] ?? '').join('');

/** Go's time.ParseDuration for the syntax config-schema.ts admits, in milliseconds. */
export function goDurationMs(text: string): number {
  if (text === '0') return 0;
  const units: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, μs: 1e-3, ms: 1, s: 1e3, m: 6e4, h: 3.6e6 };
  const sign = text.startsWith('-') ? -1 : 1;
  let total = 0;
  for (const [, amount = '0', unit = 's'] of text.matchAll(/(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/g))
    total += Number(amount) * (units[unit] ?? 0);
  return sign * total;
}

/** A decoded taint as Go holds it: absent strings are empty. */
function taintOf(config: TaintConfig): Taint {
  return {
    key: config.key ?? '',
    ...(config.value === undefined || config.value === '' ? {} : { value: config.value }),
    effect: config.effect ?? '',
    ...(config.timeAdded === undefined || config.timeAdded === null ? {} : { timeAdded: config.timeAdded }),
  };
}

/**
 * `controlPlaneTaint`: init, and join with a controlPlane section. SetNodeRegistrationDynamicDefaults
 * (cmd/kubeadm/app/util/config/initconfiguration.go) adds the control-plane taint only when the
 * list is nil, so an explicit empty list means no taint.
 */
function nodeRegistration(
  config: InitConfiguration['nodeRegistration'],
  controlPlaneTaint: boolean,
): ResolvedNodeRegistration {
  const taints = config?.taints;
  return {
    // nodeutil.GetHostname: the configured name, or the host name when none is, trimmed and
    // lower-cased (a configured "Worker-1" registers Node "worker-1").
    name: (config?.name === undefined || config.name === '' ? hostname() : config.name).trim().toLowerCase(),
    criSocket: config?.criSocket ?? DEFAULT_CRI_SOCKET,
    kubeletExtraArgs: config?.kubeletExtraArgs ?? [],
    nodeIp: config?.kubeletExtraArgs?.find((a) => a.name === 'node-ip')?.value,
    // Check names are case-insensitive; duplicates collapse (kubeadm keeps a set).
    ignorePreflightErrors: [...new Set((config?.ignorePreflightErrors ?? []).map((e) => e.toLowerCase()))],
    taints:
      taints === undefined || taints === null ? (controlPlaneTaint ? [CONTROL_PLANE_TAINT] : []) : taints.map(taintOf),
  };
}

function kubernetesApiCallMs(timeouts: { kubernetesAPICall?: string | undefined } | undefined): number {
  return timeouts?.kubernetesAPICall === undefined
    ? DEFAULT_KUBERNETES_API_CALL_MS
    : goDurationMs(timeouts.kubernetesAPICall);
}

/** SetDefaults_BootstrapTokens + SetDefaults_BootstrapToken, then the random token of SetInitDynamicDefaults. */
export function defaultBootstrapTokens(
  configs: BootstrapTokenConfig[] | undefined,
  now = new Date(),
): ResolvedBootstrapToken[] {
  // An absent or empty list becomes one token with every field defaulted.
  const tokens = configs === undefined || configs.length === 0 ? [{}] : configs;
  return tokens.map((config: BootstrapTokenConfig) => {
    const [id = random(6), secret = random(16)] = config.token?.split('.') ?? [];
    const ttlMs = config.ttl === undefined ? DEFAULT_TOKEN_TTL_MS : goDurationMs(config.ttl);
    const expires =
      config.expires !== undefined
        ? new Date(config.expires)
        : ttlMs === 0
          ? undefined
          : new Date(now.getTime() + ttlMs);
    return {
      id,
      secret,
      description: config.description ?? '',
      expires,
      usages: config.usages === undefined || config.usages.length === 0 ? [...DEFAULT_TOKEN_USAGES] : config.usages,
      groups: config.groups === undefined || config.groups.length === 0 ? [...DEFAULT_TOKEN_GROUPS] : config.groups,
    };
  });
}

export function defaultInit(config: InitConfiguration): ResolvedInit {
  const registration = nodeRegistration(config.nodeRegistration, true);
  return {
    nodeRegistration: registration,
    // SetAPIEndpointDynamicDefaults picks the default route's address; the stand-in loopback.
    advertiseAddress: config.localAPIEndpoint?.advertiseAddress ?? '127.0.0.1',
    bindPort: config.localAPIEndpoint?.bindPort ?? DEFAULT_BIND_PORT,
    certificateKey: config.certificateKey ?? '',
    bootstrapTokens: defaultBootstrapTokens(config.bootstrapTokens),
    bootstrapTokenConfigs: config.bootstrapTokens ?? [],
    skipPhases: config.skipPhases ?? [],
    kubernetesApiCallMs: kubernetesApiCallMs(config.timeouts),
  };
}

export function defaultCluster(config: ClusterConfiguration): ResolvedCluster {
  return {
    clusterName: config.clusterName ?? 'kubernetes',
    kubernetesVersion: config.kubernetesVersion ?? 'stable-1',
    // No default: kubeconfigs fall back to the advertise address (GetControlPlaneEndpoint), but
    // the configuration kubeadm stores keeps it unset, and control planes may then not join.
    controlPlaneEndpoint: config.controlPlaneEndpoint ?? '',
    serviceSubnet: config.networking?.serviceSubnet ?? '10.96.0.0/12',
    podSubnet: config.networking?.podSubnet ?? '',
    dnsDomain: config.networking?.dnsDomain ?? 'cluster.local',
    certSANs: config.apiServer?.certSANs ?? [],
    extraArgs: {
      apiServer: config.apiServer?.extraArgs ?? [],
      controllerManager: config.controllerManager?.extraArgs ?? [],
      scheduler: config.scheduler?.extraArgs ?? [],
    },
  };
}

export function defaultJoin(config: JoinConfiguration): ResolvedJoin {
  const bootstrap = config.discovery.bootstrapToken;
  const token = bootstrap?.token ?? '';
  return {
    // SetJoinDynamicDefaults: the control-plane taint only for a control-plane join.
    nodeRegistration: nodeRegistration(config.nodeRegistration, config.controlPlane !== undefined),
    apiServerEndpoint: bootstrap?.apiServerEndpoint ?? '',
    token,
    // SetDefaults_Discovery: the TLS bootstrap token defaults to the discovery token.
    tlsBootstrapToken: config.discovery.tlsBootstrapToken ?? token,
    caCertHashes: bootstrap?.caCertHashes ?? [],
    unsafeSkipCAVerification: bootstrap?.unsafeSkipCAVerification ?? false,
    controlPlane:
      config.controlPlane === undefined
        ? undefined
        : {
            advertiseAddress: config.controlPlane.localAPIEndpoint?.advertiseAddress ?? '127.0.0.1',
            bindPort: config.controlPlane.localAPIEndpoint?.bindPort ?? DEFAULT_BIND_PORT,
            certificateKey: config.controlPlane.certificateKey ?? '',
          },
    skipPhases: config.skipPhases ?? [],
    discoveryTimeoutMs:
      config.timeouts?.discovery === undefined ? DEFAULT_DISCOVERY_MS : goDurationMs(config.timeouts.discovery),
    tlsBootstrapTimeoutMs:
      config.timeouts?.tlsBootstrap === undefined
        ? DEFAULT_TLS_BOOTSTRAP_MS
        : goDurationMs(config.timeouts.tlsBootstrap),
    kubernetesApiCallMs: kubernetesApiCallMs(config.timeouts),
  };
}

/** host:port, with IPv6 hosts in brackets (net.JoinHostPort). */
export function hostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}
