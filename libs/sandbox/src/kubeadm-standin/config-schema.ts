import { parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { errorMessage } from '@constellation/errors';
import {
  IGNORED_WARNING_SOURCE,
  STRICT_WARNING_SOURCE,
  gvkGoSyntax,
  gvkString,
  ignoredDocumentWarning,
  initDocumentVerdict,
  unknownConfigurationWarning,
} from './init-document-kinds.js';
import type { GroupVersionKind } from './init-document-kinds.js';

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

/**
 * SplitYAMLDocuments' message for a document without group, version or kind: Go's %+v of the
 * *schema.GroupVersionKind, which is its String() ("/v1, Kind=ConfigMap").
 */
function missingTypeMeta(gvk: GroupVersionKind): string {
  return `invalid configuration for GroupVersionKind ${gvkString(gvk)}: kind and apiVersion is mandatory information that must be specified`;
}

/** A document of the file with its type meta, as SplitYAMLDocuments reads it. */
interface ConfigDocument {
  gvk: GroupVersionKind;
  value: unknown;
}

/**
 * SplitYAMLDocuments (cmd/kubeadm/app/util/marshal.go): every document must name a group,
 * version and kind (the first that does not ends the split); a kind may appear once (each repeat
 * is an error, reported together at the end, as utilerrors.NewAggregate words them).
 */
function splitConfigDocuments(text: string): ConfigDocument[] {
  const documents: ConfigDocument[] = [];
  const repeated: string[] = [];
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
    const apiVersion = typeof record.apiVersion === 'string' ? record.apiVersion : '';
    // schema.ParseGroupVersion: "" and "v1" have no group; more than one "/" does not parse.
    const parts = apiVersion === '' ? ['', ''] : apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
    if (parts.length > 2) throw new ConfigError(`unexpected GroupVersion string: ${apiVersion}`);
    const gvk = { group: parts[0] ?? '', version: parts[1] ?? '', kind };
    if (gvk.group === '' || gvk.version === '' || kind === '') throw new ConfigError(missingTypeMeta(gvk));
    if (seen.has(kind)) {
      repeated.push(`invalid configuration: kind "${kind}" is specified twice in YAML file`);
      continue;
    }
    seen.add(kind);
    documents.push({ gvk, value });
  }
  if (repeated.length > 0)
    throw new ConfigError(repeated.length === 1 ? (repeated[0] ?? '') : `[${repeated.join(', ')}]`);
  return documents;
}

/**
 * Parses a multi-document kubeadm config file. Like kubeadm (`SplitYAMLDocuments` in
 * cmd/kubeadm/app/util/marshal.go) every document names its group, version and kind and a kind
 * may appear once per file; unknown fields are warned about and dropped (VerifyUnmarshalStrict
 * only logs); wrong types are errors.
 *
 * Without `only` the file is init's: each document is treated as documentMapToInitConfiguration
 * treats it (init-document-kinds.ts): read, warned about and skipped, or refused.
 *
 * `only`, when given, names the kinds the caller reads: every other document passes
 * SplitYAMLDocuments' checks and is then skipped without decoding or a word, as join's
 * documentMapToJoinConfiguration skips them.
 */
export function parseKubeadmConfig(
  text: string,
  warn: Warn = () => undefined,
  only?: readonly string[],
): KubeadmDocuments {
  const out: KubeadmDocuments = {};
  const documents = splitConfigDocuments(text);
  if (only !== undefined) {
    for (const { gvk, value } of documents)
      if (only.includes(gvk.kind)) store(out, gvk, decodeDocument(gvk, value, warn));
    return out;
  }
  // documentMapToInitConfiguration takes the documents in the order of their GVK strings.
  documents.sort((a, b) => (gvkString(a.gvk) < gvkString(b.gvk) ? -1 : gvkString(a.gvk) > gvkString(b.gvk) ? 1 : 0));
  let refusal: string | undefined;
  for (const { gvk, value } of documents) {
    const verdict = initDocumentVerdict(gvk);
    if (verdict.unknown) warn(klogWarning(STRICT_WARNING_SOURCE, unknownConfigurationWarning(gvk)));
    switch (verdict.action) {
      case 'refuse':
        throw new ConfigError(verdict.message);
      case 'refuse-after-loop':
        refusal ??= verdict.message;
        break;
      case 'decode':
        store(out, gvk, decodeDocument(gvk, value, warn));
        break;
      case 'check-and-ignore':
        checkIgnoredDocument(gvk, value, warn);
        warn(klogWarning(IGNORED_WARNING_SOURCE, ignoredDocumentWarning(gvk)));
        break;
      case 'ignore':
        warn(klogWarning(IGNORED_WARNING_SOURCE, ignoredDocumentWarning(gvk)));
        break;
    }
  }
  // FetchFromDocumentMap runs after the check that an Init- or ClusterConfiguration was given.
  if (refusal !== undefined && (out.init !== undefined || out.cluster !== undefined)) throw new ConfigError(refusal);
  return out;
}

const SCHEMAS: Record<string, z.ZodType | undefined> = {
  InitConfiguration: initConfigurationSchema,
  ClusterConfiguration: clusterConfigurationSchema,
  JoinConfiguration: joinConfigurationSchema,
  KubeletConfiguration: kubeletConfigurationSchema,
};

/** Decodes one document the stand-in reads: unknown fields are warnings, wrong types errors. */
function decodeDocument(gvk: GroupVersionKind, value: unknown, warn: Warn): unknown {
  const schema = SCHEMAS[gvk.kind];
  if (schema === undefined) throw new ConfigError(`unknown kind ${JSON.stringify(gvk.kind)}`);
  const parsed = decodeWarningUnknown(schema, value, (unknown) => {
    warn(
      klogWarning(
        STRICT_WARNING_SOURCE,
        `error unmarshaling configuration ${gvkGoSyntax(gvk)}: strict decoding error: ${unknown}`,
      ),
    );
  });
  if (!parsed.success) {
    const issue = parsed.issue;
    const field = issue?.path.map(String).join('.') ?? '';
    throw new ConfigError(
      `${gvk.kind}: strict decoding error: ${field === '' ? '' : `${field}: `}${issue?.message ?? 'invalid'}`,
    );
  }
  return parsed.data;
}

/**
 * VerifyUnmarshalStrict on a known document init does not read: init logs whatever it finds
 * instead of failing. The stand-in checks the JoinConfiguration it models and lets the kinds it
 * has no schema for (ResetConfiguration, UpgradeConfiguration) pass unchecked.
 */
function checkIgnoredDocument(gvk: GroupVersionKind, value: unknown, warn: Warn): void {
  if (SCHEMAS[gvk.kind] === undefined) return;
  try {
    decodeDocument(gvk, value, warn);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    warn(klogWarning(STRICT_WARNING_SOURCE, `error unmarshaling configuration ${gvkGoSyntax(gvk)}: ${err.message}`));
  }
}

function store(out: KubeadmDocuments, gvk: GroupVersionKind, data: unknown): void {
  if (gvk.kind === 'InitConfiguration') out.init = data as InitConfiguration;
  if (gvk.kind === 'ClusterConfiguration') out.cluster = data as ClusterConfiguration;
  if (gvk.kind === 'JoinConfiguration') out.join = data as JoinConfiguration;
  if (gvk.kind === 'KubeletConfiguration') out.kubelet = data as Record<string, unknown>;
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
