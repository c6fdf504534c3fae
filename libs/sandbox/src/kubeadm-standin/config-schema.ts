import { parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { errorMessage } from '@constellation/errors';

/*
 * Decoding of the part of kubeadm's v1beta4 configuration the stand-in understands, as kubeadm
 * decodes it (cmd/kubeadm/app/util/config/strict/strict.go, initconfiguration.go): a value of the
 * wrong type is an error naming the field; an unknown field is only a warning ("error
 * unmarshaling configuration ...: strict decoding error: unknown field ...") and is dropped.
 * Defaults and validation follow in config-defaults.ts and config-validation.ts.
 */

const API = z.literal('kubeadm.k8s.io/v1beta4');
const args = z.array(z.strictObject({ name: z.string(), value: z.string() }));
const endpoint = z.strictObject({
  advertiseAddress: z.string().optional(),
  bindPort: z.number().int().optional(),
});
/** metav1.Duration: Go's time.ParseDuration syntax ("24h0m0s", "15m", "1.5h", "0"). */
const GO_DURATION = /^[+-]?(0|((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+)$/;
const duration = z.string().refine((value) => GO_DURATION.test(value), {
  error: (issue) => `time: invalid duration ${JSON.stringify(issue.input)}`,
});
/** metav1.Time: RFC 3339. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const time = z.string().refine((value) => RFC3339.test(value) && !Number.isNaN(Date.parse(value)), {
  error: (issue) =>
    `parsing time ${JSON.stringify(issue.input)} as "2006-01-02T15:04:05Z07:00": cannot parse ${JSON.stringify(issue.input)} as "2006"`,
});
/** core/v1 Taint: no field is required when decoding (the API server validates it on the Node). */
const taint = z.strictObject({
  key: z.string().optional(),
  value: z.string().optional(),
  effect: z.string().optional(),
  timeAdded: time.nullable().optional(),
});
const nodeRegistration = z.strictObject({
  name: z.string().optional(),
  criSocket: z.string().optional(),
  kubeletExtraArgs: args.optional(),
  // null and absent are Go's nil (the control-plane default applies); [] is no taints.
  taints: z.array(taint).nullable().optional(),
  ignorePreflightErrors: z.array(z.string()).optional(),
});
const bootstrapToken = z.strictObject({
  token: z.string().optional(),
  description: z.string().optional(),
  ttl: duration.optional(),
  expires: time.optional(),
  usages: z.array(z.string()).optional(),
  groups: z.array(z.string()).optional(),
});
const timeouts = z.strictObject({
  controlPlaneComponentHealthCheck: duration.optional(),
  kubeletHealthCheck: duration.optional(),
  kubernetesAPICall: duration.optional(),
  etcdAPICall: duration.optional(),
  tlsBootstrap: duration.optional(),
  discovery: duration.optional(),
  upgradeManifests: duration.optional(),
});

export const initConfigurationSchema = z.strictObject({
  apiVersion: API,
  kind: z.literal('InitConfiguration'),
  bootstrapTokens: z.array(bootstrapToken).optional(),
  nodeRegistration: nodeRegistration.optional(),
  localAPIEndpoint: endpoint.optional(),
  certificateKey: z.string().optional(),
  skipPhases: z.array(z.string()).optional(),
  timeouts: timeouts.optional(),
});

export const clusterConfigurationSchema = z.strictObject({
  apiVersion: API,
  kind: z.literal('ClusterConfiguration'),
  clusterName: z.string().optional(),
  kubernetesVersion: z.string().optional(),
  controlPlaneEndpoint: z.string().optional(),
  networking: z
    .strictObject({
      serviceSubnet: z.string().optional(),
      podSubnet: z.string().optional(),
      dnsDomain: z.string().optional(),
    })
    .optional(),
  apiServer: z.strictObject({ certSANs: z.array(z.string()).optional(), extraArgs: args.optional() }).optional(),
  controllerManager: z.strictObject({ extraArgs: args.optional() }).optional(),
  scheduler: z.strictObject({ extraArgs: args.optional() }).optional(),
});

export const joinConfigurationSchema = z.strictObject({
  apiVersion: API,
  kind: z.literal('JoinConfiguration'),
  nodeRegistration: nodeRegistration.optional(),
  discovery: z.strictObject({
    bootstrapToken: z
      .strictObject({
        apiServerEndpoint: z.string().optional(),
        token: z.string().optional(),
        caCertHashes: z.array(z.string()).optional(),
        unsafeSkipCAVerification: z.boolean().optional(),
      })
      .optional(),
    tlsBootstrapToken: z.string().optional(),
  }),
  controlPlane: z
    .strictObject({ localAPIEndpoint: endpoint.optional(), certificateKey: z.string().optional() })
    .optional(),
  skipPhases: z.array(z.string()).optional(),
  timeouts: timeouts.optional(),
});

const kubeletConfigurationSchema = z.looseObject({
  apiVersion: z.literal('kubelet.config.k8s.io/v1beta1'),
  kind: z.literal('KubeletConfiguration'),
});

export type InitConfiguration = z.infer<typeof initConfigurationSchema>;
export type ClusterConfiguration = z.infer<typeof clusterConfigurationSchema>;
export type JoinConfiguration = z.infer<typeof joinConfigurationSchema>;
export type BootstrapTokenConfig = z.infer<typeof bootstrapToken>;
export type Arg = z.infer<typeof args>[number];
export type TaintConfig = z.infer<typeof taint>;

export interface KubeadmDocuments {
  init?: InitConfiguration;
  cluster?: ClusterConfiguration;
  join?: JoinConfiguration;
  /** A KubeletConfiguration document as written (init stores it; join never reads one). */
  kubelet?: Record<string, unknown>;
}

/** kubeadm's wording for a configuration that cannot be used, naming the document and field. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** Where kubeadm's klog warnings go. */
export type Warn = (line: string) => void;

/** A klog warning line: "W1123 08:10:11.123456   4242 file.go:120] message". */
export function klogWarning(source: string, message: string, now = new Date()): string {
  const two = (n: number): string => String(n).padStart(2, '0');
  const date = `${two(now.getUTCMonth() + 1)}${two(now.getUTCDate())}`;
  const time = `${two(now.getUTCHours())}:${two(now.getUTCMinutes())}:${two(now.getUTCSeconds())}.${String(now.getUTCMilliseconds() * 1000).padStart(6, '0')}`;
  return `W${date} ${time} ${String(process.pid).padStart(7)} ${source}] ${message}`;
}

const GROUP_VERSION_KIND = (kind: string, apiVersion: string): string => {
  const [group = '', version = ''] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
  return `schema.GroupVersionKind{Group:"${group}", Version:"${version}", Kind:"${kind}"}`;
};

/** SplitConfigDocuments' message for a document without group, version or kind (Go's %+v of the GVK). */
function missingTypeMeta(kind: string, apiVersion: string): string {
  const [group = '', version = ''] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
  return `invalid configuration for GroupVersionKind {Group:${group} Version:${version} Kind:${kind}}: kind and apiVersion is mandatory information that must be specified`;
}

/**
 * Parses a multi-document kubeadm config file. Like kubeadm (`SplitConfigDocuments` in
 * cmd/kubeadm/app/util/marshal.go) a kind may appear once per file; unknown fields are warned
 * about and dropped (VerifyUnmarshalStrict only logs); wrong types are errors.
 *
 * `only`, when given, names the kinds the caller reads: every other document passes
 * SplitConfigDocuments' checks (group, version and kind present, no kind twice) and is then
 * skipped without decoding or a word, as join's documentMapToJoinConfiguration skips them.
 */
export function parseKubeadmConfig(
  text: string,
  warn: Warn = () => undefined,
  only?: readonly string[],
): KubeadmDocuments {
  const out: KubeadmDocuments = {};
  const seen = new Set<string>();
  for (const [index, doc] of parseAllDocuments(text, { uniqueKeys: true }).entries()) {
    if (doc.errors.length > 0)
      throw new ConfigError(`document ${index}: invalid YAML: ${doc.errors[0]?.message ?? ''}`);
    let value: unknown;
    try {
      // Unresolved aliases and alias bombs only show here, as yaml's ReferenceError.
      value = doc.toJS({ maxAliasCount: 100 });
    } catch (err) {
      throw new ConfigError(`document ${index}: invalid YAML: ${errorMessage(err)}`);
    }
    if (value === null) continue;
    const record = value as { kind?: unknown; apiVersion?: unknown };
    const kind = typeof record.kind === 'string' ? record.kind : '';
    if (seen.has(kind)) throw new ConfigError(`invalid configuration: kind "${kind}" is specified twice in YAML file`);
    seen.add(kind);
    if (only !== undefined && !only.includes(kind)) {
      const apiVersion = typeof record.apiVersion === 'string' ? record.apiVersion : '';
      if (kind === '' || !/^[^/]+\/[^/]+$/.test(apiVersion)) throw new ConfigError(missingTypeMeta(kind, apiVersion));
      continue;
    }
    const schema =
      kind === 'InitConfiguration'
        ? initConfigurationSchema
        : kind === 'ClusterConfiguration'
          ? clusterConfigurationSchema
          : kind === 'JoinConfiguration'
            ? joinConfigurationSchema
            : kind === 'KubeletConfiguration'
              ? kubeletConfigurationSchema
              : undefined;
    if (schema === undefined) throw new ConfigError(`document ${index}: unknown kind ${JSON.stringify(kind)}`);
    const apiVersion = typeof record.apiVersion === 'string' ? record.apiVersion : '';
    const parsed = decodeWarningUnknown(schema, value, (unknown) => {
      warn(
        klogWarning(
          'initconfiguration.go:306',
          `error unmarshaling configuration ${GROUP_VERSION_KIND(kind, apiVersion)}: strict decoding error: ${unknown}`,
        ),
      );
    });
    if (!parsed.success) {
      const issue = parsed.issue;
      const field = issue?.path.map(String).join('.') ?? '';
      throw new ConfigError(
        `${kind}: strict decoding error: ${field === '' ? '' : `${field}: `}${issue?.message ?? 'invalid'}`,
      );
    }
    if (kind === 'InitConfiguration') out.init = parsed.data as InitConfiguration;
    if (kind === 'ClusterConfiguration') out.cluster = parsed.data as ClusterConfiguration;
    if (kind === 'JoinConfiguration') out.join = parsed.data as JoinConfiguration;
    if (kind === 'KubeletConfiguration') out.kubelet = parsed.data as Record<string, unknown>;
  }
  return out;
}

type Decoded = { success: true; data: unknown } | { success: false; issue: z.core.$ZodIssue | undefined };

/** Decodes strictly, but drops unknown fields after reporting each (at most a few rounds). */
function decodeWarningUnknown(schema: z.ZodType, input: unknown, onUnknown: (message: string) => void): Decoded {
  let value = structuredClone(input);
  for (let round = 0; round < 8; round++) {
    const parsed = schema.safeParse(value);
    if (parsed.success) return { success: true, data: parsed.data };
    const issues = parsed.error.issues;
    const unknown = issues.flatMap((i) => (i.code === 'unrecognized_keys' ? [i] : []));
    if (unknown.length === 0 || unknown.length !== issues.length) {
      return { success: false, issue: issues.find((i) => i.code !== 'unrecognized_keys') ?? issues[0] };
    }
    for (const issue of unknown) {
      const keys = issue.keys;
      onUnknown(`unknown field "${keys.map((k) => [...issue.path.map(String), k].join('.')).join('", "')}"`);
      value = withoutKeys(value, issue.path, keys);
    }
  }
  return { success: false, issue: undefined };
}

function withoutKeys(root: unknown, path: readonly PropertyKey[], keys: readonly string[]): unknown {
  let node: unknown = root;
  for (const step of path) node = (node as Record<PropertyKey, unknown>)[step];
  if (node !== null && typeof node === 'object') for (const key of keys) Reflect.deleteProperty(node, key);
  return root;
}
