import { parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { errorMessage } from '@constellation/errors';

/*
 * The part of kubeadm's v1beta4 configuration the stand-in accepts. Decoding is strict like
 * kubeadm's: unknown fields, wrong types and unknown kinds are errors naming the field.
 */

const API = z.literal('kubeadm.k8s.io/v1beta4');
const args = z.array(z.strictObject({ name: z.string().min(1), value: z.string() }));
const nodeRegistration = z.strictObject({
  name: z.string().regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, 'must be a lowercase RFC 1123 subdomain'),
  criSocket: z.string().optional(),
  kubeletExtraArgs: args.optional(),
  taints: z.array(z.unknown()).optional(),
});
const endpoint = z.strictObject({ advertiseAddress: z.string().min(1), bindPort: z.number().int().min(1).max(65535) });
const hostPort = z.string().regex(/^[^:\s]+:\d{1,5}$/, 'must be host:port');

export const initConfigurationSchema = z.strictObject({
  apiVersion: API,
  kind: z.literal('InitConfiguration'),
  nodeRegistration,
  localAPIEndpoint: endpoint,
  skipPhases: z.array(z.string()).optional(),
});

export const clusterConfigurationSchema = z.strictObject({
  apiVersion: API,
  kind: z.literal('ClusterConfiguration'),
  clusterName: z.string().min(1),
  kubernetesVersion: z.string().regex(/^v\d+\.\d+\.\d+$/, 'must look like v1.32.9'),
  controlPlaneEndpoint: hostPort,
  networking: z.strictObject({ serviceSubnet: z.string().optional(), podSubnet: z.string().optional() }).optional(),
  apiServer: z.strictObject({ certSANs: z.array(z.string()).optional(), extraArgs: args.optional() }).optional(),
  controllerManager: z.strictObject({ extraArgs: args.optional() }).optional(),
  scheduler: z.strictObject({ extraArgs: args.optional() }).optional(),
});

export const joinConfigurationSchema = z.strictObject({
  apiVersion: API,
  kind: z.literal('JoinConfiguration'),
  nodeRegistration,
  discovery: z.strictObject({
    bootstrapToken: z.strictObject({
      apiServerEndpoint: hostPort,
      token: z.string().regex(/^[a-z0-9]{6}\.[a-z0-9]{16}$/, 'must be a bootstrap token [a-z0-9]{6}.[a-z0-9]{16}'),
      caCertHashes: z.array(z.string().regex(/^sha256:[0-9a-f]{64}$/, 'must be sha256:<64 hex>')).min(1),
    }),
  }),
  controlPlane: z.strictObject({ localAPIEndpoint: endpoint }).optional(),
  skipPhases: z.array(z.string()).optional(),
});

const kubeletConfigurationSchema = z.looseObject({
  apiVersion: z.literal('kubelet.config.k8s.io/v1beta1'),
  kind: z.literal('KubeletConfiguration'),
});

export type InitConfiguration = z.infer<typeof initConfigurationSchema>;
export type ClusterConfiguration = z.infer<typeof clusterConfigurationSchema>;
export type JoinConfiguration = z.infer<typeof joinConfigurationSchema>;

export interface KubeadmDocuments {
  init?: InitConfiguration;
  cluster?: ClusterConfiguration;
  join?: JoinConfiguration;
}

/** kubeadm's wording for a decoding failure, naming the document and field. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/**
 * Parses a multi-document kubeadm config file strictly. Like kubeadm (`SplitConfigDocuments` in
 * cmd/kubeadm/app/util/marshal.go) a kind may appear once per file.
 */
export function parseKubeadmConfig(text: string): KubeadmDocuments {
  const out: KubeadmDocuments = {};
  const seen = new Set<string>();
  for (const [index, doc] of parseAllDocuments(text, { uniqueKeys: true }).entries()) {
    if (doc.errors.length > 0)
      throw new ConfigError(`document ${index}: invalid YAML: ${doc.errors[0]?.message ?? ''}`);
    let value: { kind?: unknown } | null;
    try {
      // Unresolved aliases and alias bombs only show here, as yaml's ReferenceError.
      value = doc.toJS({ maxAliasCount: 100 }) as { kind?: unknown } | null;
    } catch (err) {
      throw new ConfigError(`document ${index}: invalid YAML: ${errorMessage(err)}`);
    }
    if (value === null) continue;
    const kind = typeof value.kind === 'string' ? value.kind : '';
    if (seen.has(kind)) throw new ConfigError(`invalid configuration: kind "${kind}" is specified twice in YAML file`);
    seen.add(kind);
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
    const parsed = schema.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const field = issue?.path.map(String).join('.') ?? '';
      const unknown =
        issue?.code === 'unrecognized_keys'
          ? `unknown field "${issue.keys.join('", "')}"`
          : (issue?.message ?? 'invalid');
      throw new ConfigError(`${kind}: strict decoding error: ${field === '' ? '' : `${field}: `}${unknown}`);
    }
    if (kind === 'InitConfiguration') out.init = parsed.data as InitConfiguration;
    if (kind === 'ClusterConfiguration') out.cluster = parsed.data as ClusterConfiguration;
    if (kind === 'JoinConfiguration') out.join = parsed.data as JoinConfiguration;
  }
  return out;
}
