import { readFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { parseDocument } from 'yaml';
import { z } from 'zod';
import { UsageError } from '@constellation/command-line';
import { parseMeasurements } from '@constellation/attestation';
import type { Measurements } from '@constellation/attestation';

/** `constellation-conf.yaml`: what cluster to create and what its nodes must measure. */
export interface ClusterConfig {
  name: string;
  kubernetesVersion: string;
  /** host:port of the first control-plane node's InitServer. */
  initEndpoint: string;
  apiServerCertSans: string[];
  serviceCidr: string;
  attestation: { variant: 'qemu-vtpm'; measurements: Measurements };
}

const schema = z.strictObject({
  name: z
    .string()
    .regex(
      /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/,
      'must be a lowercase DNS label (a-z, 0-9, -), at most 63 characters',
    ),
  kubernetesVersion: z.string().regex(/^v\d+\.\d+\.\d+$/, 'must look like v1.32.9'),
  initEndpoint: z.string().regex(/^[^:\s]+:\d{1,5}$/, 'must be host:port of the first control-plane node'),
  apiServerCertSans: z
    .array(z.string().refine((s) => isIP(s) !== 0 || /^[a-zA-Z0-9.-]+$/.test(s), 'must be an IP address or DNS name'))
    .default([]),
  serviceCidr: z
    .string()
    .regex(/^[0-9a-fA-F.:]+\/\d{1,3}$/, 'must be a CIDR like 10.96.0.0/12')
    .default('10.96.0.0/12'),
  attestation: z.strictObject({ variant: z.literal('qemu-vtpm'), measurements: z.record(z.string(), z.unknown()) }),
});

/** Loads and validates the config; every error names the field and what was expected. */
export async function loadClusterConfig(path: string): Promise<ClusterConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    throw new UsageError(`no config at ${path}: run \`constellation config generate\` first`);
  }
  const doc = parseDocument(text, { uniqueKeys: true });
  if (doc.errors.length > 0) throw new UsageError(`${path}: not valid YAML: ${doc.errors[0]?.message ?? ''}`);
  const parsed = schema.safeParse(doc.toJS());
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.map(String).join('.') ?? '';
    const message =
      issue?.code === 'unrecognized_keys'
        ? `unknown field "${issue.keys.join('", "')}"`
        : (issue?.message ?? 'invalid');
    throw new UsageError(`${path}: ${field === '' ? '' : `${field}: `}${message}`);
  }
  let measurements: Measurements;
  try {
    measurements = parseMeasurements(
      JSON.stringify({ measurements: parsed.data.attestation.measurements }),
      `${path}: attestation`,
    );
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  return { ...parsed.data, attestation: { variant: 'qemu-vtpm', measurements } };
}

/** A commented config to edit, with `measurements` filled in (mini computes them from what it measured). */
export function configYaml(config: ClusterConfig): string {
  const measurements = [...config.attestation.measurements]
    .map(
      ([pcr, m]) =>
        `      ${pcr}:\n        expected: "${m.expected.toString('hex')}"\n        warnOnly: ${String(m.warnOnly)}`,
    )
    .join('\n');
  return [
    '# Constellation cluster configuration. `constellation init` reads this file.',
    '',
    '# Name of the cluster (a lowercase DNS label).',
    `name: ${config.name}`,
    '# Kubernetes version the nodes install.',
    `kubernetesVersion: ${config.kubernetesVersion}`,
    "# host:port of the first control-plane node's InitServer (port 9000 on real nodes).",
    `initEndpoint: ${config.initEndpoint}`,
    '# Extra names and addresses for the API server certificate (load balancer, DNS name).',
    `apiServerCertSans: [${config.apiServerCertSans.map((s) => JSON.stringify(s)).join(', ')}]`,
    '# Service network of the cluster.',
    `serviceCidr: ${config.serviceCidr}`,
    '# What every node must prove before it gets anything. A node whose PCR differs from an',
    '# enforced value is refused, and the error names the PCR with expected and actual values.',
    'attestation:',
    '  variant: qemu-vtpm',
    '  # PCR index -> expected SHA-256 value. PCR 15 must be zero until the node joins a cluster.',
    '  # warnOnly: true reports a mismatch without refusing the node.',
    `  measurements:${measurements === '' ? ' {}' : `\n${measurements}`}`,
    '',
  ].join('\n');
}
