import { randomInt } from 'node:crypto';
import { hostname } from 'node:os';
import type {
  Arg,
  BootstrapTokenConfig,
  ClusterConfiguration,
  InitConfiguration,
  JoinConfiguration,
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

function nodeRegistration(config: InitConfiguration['nodeRegistration']): ResolvedNodeRegistration {
  return {
    // nodeutil.GetHostname: the configured name, or the host name when none is, trimmed and
    // lower-cased (a configured "Worker-1" registers Node "worker-1").
    name: (config?.name === undefined || config.name === '' ? hostname() : config.name).trim().toLowerCase(),
    criSocket: config?.criSocket ?? DEFAULT_CRI_SOCKET,
    kubeletExtraArgs: config?.kubeletExtraArgs ?? [],
    nodeIp: config?.kubeletExtraArgs?.find((a) => a.name === 'node-ip')?.value,
    // Check names are case-insensitive; duplicates collapse (kubeadm keeps a set).
    ignorePreflightErrors: [...new Set((config?.ignorePreflightErrors ?? []).map((e) => e.toLowerCase()))],
  };
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
  const registration = nodeRegistration(config.nodeRegistration);
  return {
    nodeRegistration: registration,
    // SetAPIEndpointDynamicDefaults picks the default route's address; the stand-in loopback.
    advertiseAddress: config.localAPIEndpoint?.advertiseAddress ?? '127.0.0.1',
    bindPort: config.localAPIEndpoint?.bindPort ?? DEFAULT_BIND_PORT,
    certificateKey: config.certificateKey ?? '',
    bootstrapTokens: defaultBootstrapTokens(config.bootstrapTokens),
    bootstrapTokenConfigs: config.bootstrapTokens ?? [],
    skipPhases: config.skipPhases ?? [],
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
    nodeRegistration: nodeRegistration(config.nodeRegistration),
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
  };
}

/** host:port, with IPv6 hosts in brackets (net.JoinHostPort). */
export function hostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}
