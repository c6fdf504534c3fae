import { isIP } from 'node:net';
import type { ResolvedBootstrapToken, ResolvedCluster, ResolvedInit, ResolvedJoin } from './config-defaults.js';
import type { Arg, BootstrapTokenConfig } from './config-schema.js';

/*
 * kubeadm's validation of the fields the stand-in uses
 * (cmd/kubeadm/app/apis/kubeadm/validation/validation.go), with its field-error wording
 * (k8s.io/apimachinery/pkg/util/validation/field): "<path>: Invalid value: <value>: <detail>".
 * Each function names the kubeadm function it mirrors.
 */

export interface FieldError {
  field: string;
  detail: string;
}

const invalid = (field: string, value: unknown, detail: string): FieldError => ({
  field,
  detail: `Invalid value: ${JSON.stringify(value)}: ${detail}`,
});

/** utilerrors.NewAggregate(...).Error(): one message, or all of them in brackets. */
export function aggregate(errors: readonly FieldError[]): string {
  const messages = errors.map((e) => `${e.field}: ${e.detail}`);
  return messages.length === 1 ? (messages[0] ?? '') : `[${messages.join(', ')}]`;
}

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const WILDCARD_SUBDOMAIN = /^\*\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const SUBDOMAIN_MESSAGE =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const WILDCARD_MESSAGE =
  "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character (e.g. '*.example.com', regex used for validation is '\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
/** bootstraputil.IsValidBootstrapToken. */
const BOOTSTRAP_TOKEN = /^([a-z0-9]{6})\.([a-z0-9]{16})$/;
/** bootstrapapi.BootstrapGroupPattern. */
const BOOTSTRAP_GROUP = /^system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]$/;
/** constants: MinimumAddressesInServiceSubnet, MinimumAddressesInPodSubnet, MaximumBitsForServiceSubnet. */
const MIN_SERVICE_ADDRESSES = 10;
const MIN_POD_ADDRESSES = 14;
const MAX_SERVICE_SUBNET_BITS = 20;
/** constants.PodSubnetNodeMaskMaxDiff; getClusterNodeMask's defaults per family. */
const POD_SUBNET_NODE_MASK_MAX_DIFF = 16;
const DEFAULT_NODE_MASK = { 4: 24, 6: 64 } as const;
/** constants.CertificateKeySize: an AES-256 key. */
const CERTIFICATE_KEY_SIZE = 32;

/** kubeadm v1.32's init and join phases (cmd/kubeadm/app/cmd/phases), for `skipPhases`. */
const INIT_PHASES = new Set([
  'preflight',
  'certs',
  ...[
    'all',
    'ca',
    'apiserver',
    'apiserver-kubelet-client',
    'front-proxy-ca',
    'front-proxy-client',
    'etcd-ca',
    'etcd-server',
    'etcd-peer',
    'etcd-healthcheck-client',
    'apiserver-etcd-client',
    'sa',
  ].map((p) => `certs/${p}`),
  'kubeconfig',
  ...['all', 'admin', 'super-admin', 'kubelet', 'controller-manager', 'scheduler'].map((p) => `kubeconfig/${p}`),
  'etcd',
  'etcd/local',
  'control-plane',
  ...['all', 'apiserver', 'controller-manager', 'scheduler'].map((p) => `control-plane/${p}`),
  'kubelet-start',
  'wait-control-plane',
  'upload-config',
  ...['all', 'kubeadm', 'kubelet'].map((p) => `upload-config/${p}`),
  'upload-certs',
  'mark-control-plane',
  'bootstrap-token',
  'kubelet-finalize',
  ...['all', 'enable-client-cert-rotation', 'experimental-cert-rotation'].map((p) => `kubelet-finalize/${p}`),
  'addon',
  ...['all', 'coredns', 'kube-proxy'].map((p) => `addon/${p}`),
  'show-join-command',
]);
const JOIN_PHASES = new Set([
  'preflight',
  'control-plane-prepare',
  ...['all', 'download-certs', 'certs', 'kubeconfig', 'control-plane'].map((p) => `control-plane-prepare/${p}`),
  'kubelet-start',
  'control-plane-join',
  ...['all', 'etcd', 'mark-control-plane'].map((p) => `control-plane-join/${p}`),
  'wait-control-plane',
]);

/** ValidateNodeRegistrationOptions (name, criSocket, kubeletExtraArgs) with ValidateSocketPath. */
function validateNodeRegistration(name: string, criSocket: string, kubeletExtraArgs: readonly Arg[]): FieldError[] {
  const errors: FieldError[] = [];
  if (name === '')
    errors.push({
      field: 'nodeRegistration',
      detail: 'Required value: --node-name or .nodeRegistration.name in the config file is a required value.',
    });
  else if (name.length > 253 || !DNS1123_SUBDOMAIN.test(name))
    errors.push(invalid('nodeRegistration.name', name, SUBDOMAIN_MESSAGE));
  errors.push(...validateSocketPath(criSocket, 'nodeRegistration.criSocket'));
  errors.push(...validateExtraArgs(kubeletExtraArgs, 'nodeRegistration.kubeletExtraArgs'));
  return errors;
}

/** ValidateExtraArgs: each argument needs a name. */
function validateExtraArgs(args: readonly Arg[], field: string): FieldError[] {
  return args.flatMap((arg, index) =>
    arg.name === '' ? [invalid(field, `index ${index}`, 'argument has no name')] : [],
  );
}

/** Go's hex.DecodeString error for `text`, if any (pairs first, then the odd last digit). */
function hexDecodeError(text: string): string | undefined {
  const bytes = Buffer.from(text, 'utf8');
  const isHex = (b: number): boolean => /[0-9a-fA-F]/.test(String.fromCharCode(b));
  const bad = bytes.findIndex((b) => !isHex(b));
  const even = bytes.length - (bytes.length % 2);
  const invalidByte = (b: number): string => {
    const code = `U+${b.toString(16).toUpperCase().padStart(4, '0')}`;
    const printable = (b >= 0x20 && b < 0x7f) || (b >= 0xa1 && b !== 0xad);
    return `encoding/hex: invalid byte: ${printable ? `${code} '${String.fromCharCode(b)}'` : code}`;
  };
  if (bad !== -1 && bad < even) return invalidByte(bytes[bad] ?? 0);
  if (bytes.length % 2 === 1) return bad === -1 ? 'encoding/hex: odd length hex string' : invalidByte(bytes[bad] ?? 0);
  return undefined;
}

/** ValidateCertificateKey: empty, or a hex-encoded AES-256 key. */
function validateCertificateKey(key: string, field: string): FieldError[] {
  if (key === '') return [];
  const decodeError = hexDecodeError(key);
  if (decodeError !== undefined) return [invalid(field, key, `certificate key decoding error: ${decodeError}`)];
  const size = key.length / 2;
  return size === CERTIFICATE_KEY_SIZE
    ? []
    : [
        invalid(
          field,
          key,
          `invalid certificate key size ${size}, the key must be an AES key of size ${CERTIFICATE_KEY_SIZE}`,
        ),
      ];
}

/** ValidateIgnorePreflightErrors: "all" covers every check, so it may not come with others. */
export function ignorePreflightErrorsError(ignore: readonly string[]): string | undefined {
  if (!ignore.includes('all') || ignore.length === 1) return undefined;
  return aggregate([
    invalid(
      'ignore-preflight-errors',
      [...ignore].sort().join(','),
      "don't specify individual checks if 'all' is used",
    ),
  ]);
}

/** ValidateSocketPath: only unix:// URLs (a bare path was given the scheme by the dynamic defaults). */
function validateSocketPath(socket: string, field: string): FieldError[] {
  if (socket === '') return [invalid(field, socket, 'empty CRI socket')];
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(socket)?.[1] ?? '';
  if (scheme !== 'unix') return [invalid(field, socket, `only URL scheme "unix" is supported, got "${scheme}"`)];
  return [];
}

/** ValidateIPFromString (netutils.ParseIPSloppy). */
function validateIp(value: string, field: string): FieldError[] {
  return isIP(value) === 0 ? [invalid(field, value, 'ip address is not valid')] : [];
}

/** ValidatePort. */
function validatePort(port: number, field: string): FieldError[] {
  return Number.isInteger(port) && port >= 1 && port <= 65535 ? [] : [invalid(field, port, 'port number is not valid')];
}

/**
 * kubeadmutil.ParseHostPort: "host", "host:port", "[v6]:port" or a bare IPv6 address; the host an
 * IP or DNS-1123 subdomain, the port 1-65535.
 */
export function parseHostPort(text: string): { host: string; port: number | undefined } | undefined {
  let host = text;
  let portText: string | undefined;
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(text);
  if (bracketed !== null) {
    host = bracketed[1] ?? '';
    portText = bracketed[2];
    if (isIP(host) !== 6) return undefined;
  } else if (isIP(text) === 6) host = text;
  else if (text.includes(':')) {
    const index = text.lastIndexOf(':');
    host = text.slice(0, index);
    portText = text.slice(index + 1);
  }
  if (isIP(host) === 0 && (host.length > 253 || !DNS1123_SUBDOMAIN.test(host))) return undefined;
  if (portText === undefined) return { host, port: undefined };
  const port = /^\d{1,5}$/.test(portText) ? Number(portText) : NaN;
  if (!(port >= 1 && port <= 65535)) return undefined;
  return { host, port };
}

/** net.SplitHostPort, as ValidateDiscoveryTokenAPIServer uses it: a port is required. */
function splitHostPortError(text: string): string | undefined {
  const bracketed = /^\[([^\]]*)\]:(.*)$/.exec(text);
  if (bracketed !== null) return undefined;
  const colons = text.split(':').length - 1;
  if (colons === 0) return `address ${text}: missing port in address`;
  if (colons > 1) return `address ${text}: too many colons in address`;
  return undefined;
}

/** ValidateCertSANs. */
function validateCertSans(sans: readonly string[], field: string): FieldError[] {
  return sans
    .filter(
      (san) => !(san.length <= 253 && DNS1123_SUBDOMAIN.test(san)) && !WILDCARD_SUBDOMAIN.test(san) && isIP(san) === 0,
    )
    .map((san) =>
      invalid(
        field,
        san,
        `altname is not a valid IP address, DNS label or a DNS label with subdomain wildcards: ${SUBDOMAIN_MESSAGE}; ${WILDCARD_MESSAGE}`,
      ),
    );
}

/** A CIDR as netutils.ParseCIDRs reads it: address, prefix length, address bits. */
function parseCidr(text: string): { bits: number; prefix: number } | undefined {
  const [address = '', prefixText = '', ...rest] = text.split('/');
  const family = isIP(address);
  if (family === 0 || rest.length > 0 || !/^\d{1,3}$/.test(prefixText)) return undefined;
  const bits = family === 4 ? 32 : 128;
  const prefix = Number(prefixText);
  return prefix <= bits ? { bits, prefix } : undefined;
}

/** ValidateIPNetFromString + ValidateServiceSubnetSize (service) or the minimum size alone (pods). */
function validateSubnets(text: string, field: string, minAddresses: number, service: boolean): FieldError[] {
  const parts = text.split(',');
  const subnets = parts.map(parseCidr);
  if (subnets.some((s) => s === undefined)) return [invalid(field, text, "couldn't parse subnet")];
  const parsed = subnets as { bits: number; prefix: number }[];
  const errors: FieldError[] = [];
  const dualStack = parsed.length === 2 && parsed[0]?.bits !== parsed[1]?.bits;
  if (parsed.length > 2 || (parsed.length === 2 && !dualStack))
    errors.push(
      invalid(field, text, 'expected one (IPv4 or IPv6) CIDR or two CIDRs from each family for dual-stack networking'),
    );
  parsed.forEach((subnet, index) => {
    const hostBits = subnet.bits - subnet.prefix;
    if (2 ** hostBits < minAddresses)
      errors.push(
        invalid(
          field,
          parts[index],
          `subnet with ${2 ** hostBits} address(es) is too small, the minimum is ${minAddresses}`,
        ),
      );
    if (service && hostBits > MAX_SERVICE_SUBNET_BITS)
      errors.push(
        invalid(
          field,
          parts[index],
          `specified service subnet is too large; for ${subnet.bits}-bit addresses, the mask must be >= ${subnet.bits - MAX_SERVICE_SUBNET_BITS}`,
        ),
      );
  });
  return errors;
}

/** ValidateBootstrapTokens: ValidateToken, ValidateTokenUsages, ValidateTokenGroups, TTL xor Expires. */
function validateBootstrapTokens(
  configs: readonly BootstrapTokenConfig[],
  resolved: readonly ResolvedBootstrapToken[],
): FieldError[] {
  const errors: FieldError[] = [];
  resolved.forEach((token, index) => {
    const path = `bootstrapTokens[${index}]`;
    const text = configs[index]?.token ?? `${token.id}.${token.secret}`;
    if (!BOOTSTRAP_TOKEN.test(text)) errors.push(invalid(`${path}.token`, text, 'the bootstrap token is invalid'));
    const unknownUsage = token.usages.find((u) => u !== 'signing' && u !== 'authentication');
    if (unknownUsage !== undefined)
      errors.push(
        invalid(
          `${path}.usages`,
          token.usages,
          `invalid bootstrap token usage string: ${unknownUsage}, valid usage options: signing,authentication`,
        ),
      );
    if (token.groups.length > 0 && !token.usages.includes('authentication'))
      errors.push(
        invalid(
          `${path}.groups`,
          token.groups,
          'token groups cannot be specified unless --usages includes "authentication"',
        ),
      );
    for (const group of token.groups.filter((g) => !BOOTSTRAP_GROUP.test(g)))
      errors.push(
        invalid(
          `${path}.groups`,
          token.groups,
          `bootstrap group "${group}" is invalid (must match ${BOOTSTRAP_GROUP.source})`,
        ),
      );
    const written = configs[index];
    if (written?.ttl !== undefined && written.expires !== undefined)
      errors.push(invalid(path, '', 'the BootstrapToken .TTL and .Expires fields are mutually exclusive'));
  });
  return errors;
}

/** ValidateSkipPhases as the phase runner does it (workflow/runner.go computePhaseRunFlags). */
function skipPhaseError(skip: readonly string[], known: ReadonlySet<string>): string | undefined {
  const unknown = skip.find((phase) => !known.has(phase.toLowerCase()));
  return unknown === undefined ? undefined : `invalid phase name: ${unknown}`;
}

/** KubernetesReleaseVersion: a semantic version ("v1.33.0-rc.1", "1.32.9"); labels need the network. */
export function releaseVersion(text: string): string | undefined {
  const match = /^v?((0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)([-0-9a-zA-Z_.+]*)?)$/.exec(text);
  return match === null ? undefined : `v${match[1] ?? ''}`;
}

/** ValidateInitConfiguration + ValidateClusterConfiguration (the parts the stand-in uses). */
export function validateInit(init: ResolvedInit, cluster: ResolvedCluster): FieldError[] {
  return [
    ...validateNodeRegistration(
      init.nodeRegistration.name,
      init.nodeRegistration.criSocket,
      init.nodeRegistration.kubeletExtraArgs,
    ),
    ...validateBootstrapTokens(init.bootstrapTokenConfigs, init.bootstrapTokens),
    ...validateCluster(cluster),
    ...validateIp(init.advertiseAddress, 'localAPIEndpoint.advertiseAddress'),
    ...validatePort(init.bindPort, 'localAPIEndpoint.bindPort'),
    ...validateCertificateKey(init.certificateKey, 'certificateKey'),
  ];
}

function validateCluster(cluster: ResolvedCluster): FieldError[] {
  const errors: FieldError[] = [];
  if (cluster.dnsDomain.length > 253 || !DNS1123_SUBDOMAIN.test(cluster.dnsDomain))
    errors.push(invalid('networking.dnsDomain', cluster.dnsDomain, SUBDOMAIN_MESSAGE));
  if (cluster.serviceSubnet !== '')
    errors.push(...validateSubnets(cluster.serviceSubnet, 'networking.serviceSubnet', MIN_SERVICE_ADDRESSES, true));
  if (cluster.podSubnet !== '') {
    const podErrors = validateSubnets(cluster.podSubnet, 'networking.podSubnet', MIN_POD_ADDRESSES, false);
    errors.push(...podErrors);
    // Only when kube-controller-manager allocates node CIDRs (its flag not "false").
    const parsed = podErrors.some((e) => e.detail.includes("couldn't parse subnet"));
    if (!parsed && argValue(cluster.extraArgs.controllerManager, 'allocate-node-cidrs') !== 'false')
      errors.push(...validatePodSubnetNodeMask(cluster));
  }
  errors.push(...validateCertSans(cluster.certSANs, 'apiServer.certSANs'));
  errors.push(...validateExtraArgs(cluster.extraArgs.apiServer, 'apiServer.extraArgs'));
  errors.push(...validateExtraArgs(cluster.extraArgs.controllerManager, 'controllerManager.extraArgs'));
  errors.push(...validateExtraArgs(cluster.extraArgs.scheduler, 'scheduler.extraArgs'));
  if (cluster.controlPlaneEndpoint !== '' && parseHostPort(cluster.controlPlaneEndpoint) === undefined)
    errors.push(invalid('controlPlaneEndpoint', cluster.controlPlaneEndpoint, 'endpoint is not valid'));
  return errors;
}

/** GetArgValue(args, name, -1): the last value given for `name`. */
function argValue(args: readonly Arg[], name: string): string | undefined {
  return args.findLast((arg) => arg.name === name)?.value;
}

/** ValidatePodSubnetNodeMask with getClusterNodeMask: each pod subnet holds 1 to 2^16 node subnets. */
function validatePodSubnetNodeMask(cluster: ResolvedCluster): FieldError[] {
  const field = 'networking.podSubnet';
  return cluster.podSubnet.split(',').flatMap((text) => {
    const subnet = parseCidr(text);
    if (subnet === undefined) return [];
    const family = subnet.bits === 32 ? 4 : 6;
    const flag = `node-cidr-mask-size-ipv${family}`;
    const given = argValue(cluster.extraArgs.controllerManager, flag);
    const nodeMask = given === undefined || given === '' ? DEFAULT_NODE_MASK[family] : Number(given);
    if (!/^[+-]?\d+$/.test(given ?? '0'))
      return [
        invalid(
          field,
          text,
          `could not parse the value of the kube-controller-manager flag ${flag} as an integer: strconv.Atoi: parsing ${JSON.stringify(given)}: invalid syntax`,
        ),
      ];
    if (subnet.prefix > nodeMask)
      return [
        invalid(
          field,
          text,
          `the size of pod subnet with mask ${subnet.prefix} is smaller than the size of node subnet with mask ${nodeMask}`,
        ),
      ];
    if (nodeMask - subnet.prefix > POD_SUBNET_NODE_MASK_MAX_DIFF)
      return [
        invalid(
          field,
          text,
          `pod subnet mask (${subnet.prefix}) and node-mask (${nodeMask}) difference is greater than ${POD_SUBNET_NODE_MASK_MAX_DIFF}`,
        ),
      ];
    return [];
  });
}

/** ValidateJoinConfiguration: discovery, node registration, control plane endpoint. */
export function validateJoin(join: ResolvedJoin): FieldError[] {
  const errors: FieldError[] = [];
  const path = 'discovery.bootstrapToken';
  if (join.apiServerEndpoint === '')
    errors.push({ field: path, detail: 'Required value: APIServerEndpoint is not set' });
  if (join.caCertHashes.length === 0 && !join.unsafeSkipCAVerification)
    errors.push(
      invalid(
        `${path}.caCertHashes`,
        '',
        'using token-based discovery without caCertHashes can be unsafe. Set unsafeSkipCAVerification as true in your kubeadm config file or pass --discovery-token-unsafe-skip-ca-verification flag to continue',
      ),
    );
  if (!BOOTSTRAP_TOKEN.test(join.token))
    errors.push(invalid(`${path}.token`, join.token, 'the bootstrap token is invalid'));
  const split = splitHostPortError(join.apiServerEndpoint);
  if (join.apiServerEndpoint !== '' && split !== undefined)
    errors.push(invalid(`${path}.apiServerEndpoint`, join.apiServerEndpoint, split));
  if (!BOOTSTRAP_TOKEN.test(join.tlsBootstrapToken))
    errors.push(invalid('discovery.tlsBootstrapToken', join.tlsBootstrapToken, 'the bootstrap token is invalid'));
  errors.push(
    ...validateNodeRegistration(
      join.nodeRegistration.name,
      join.nodeRegistration.criSocket,
      join.nodeRegistration.kubeletExtraArgs,
    ),
  );
  if (join.controlPlane !== undefined) {
    errors.push(...validateIp(join.controlPlane.advertiseAddress, 'controlPlane.localAPIEndpoint.advertiseAddress'));
    errors.push(...validatePort(join.controlPlane.bindPort, 'controlPlane.localAPIEndpoint.bindPort'));
    errors.push(...validateCertificateKey(join.controlPlane.certificateKey, 'controlPlane.certificateKey'));
  }
  return errors;
}

export const initSkipPhaseError = (skip: readonly string[]): string | undefined => skipPhaseError(skip, INIT_PHASES);
export const joinSkipPhaseError = (skip: readonly string[]): string | undefined => skipPhaseError(skip, JOIN_PHASES);
