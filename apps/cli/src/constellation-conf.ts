import { readFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { parseDocument, stringify } from 'yaml';
import { z } from 'zod';
import { UsageError } from '@constellation/command-line';
import { parseAttestationFile, pemCertificatesToDer } from '@constellation/attestation';
import type { AttestationPolicy, EventPolicy, Measurements } from '@constellation/attestation';
import { errorMessage } from '@constellation/errors';
import { SUPPORTED_KUBERNETES_MINORS, unsupportedKubernetesVersion } from '@constellation/kubeadm';

/** `constellation-conf.yaml`: what cluster to create and what its nodes must measure. */
export interface ClusterConfig {
  name: string;
  kubernetesVersion: string;
  /** host:port of the first control-plane node's InitServer. */
  initEndpoint: string;
  apiServerCertSans: string[];
  serviceCidr: string;
  attestation: ClusterAttestation;
}

/**
 * What nodes must prove: with "tpm2-ek" (the default) the TPM's EK certificate must chain to
 * `ekRoots` (PEM, pinned here) and the quotes must match `measurements`; "qemu-vtpm" checks the
 * quotes only and proves no machine identity. Either way the node's event log must replay to its
 * quote, and `eventPolicy` (optional) adds rules on its events.
 */
export type ClusterAttestation =
  | {
      variant: 'tpm2-ek';
      measurements: Measurements;
      eventPolicy?: EventPolicy;
      ekRoots: string;
      ekIntermediates: string;
      /**
       * The EK hash (lower-case hex) of the machine at `initEndpoint`: init sends its secrets to
       * that machine only. Unset, any genuine machine running the image passes.
       */
      firstControlPlaneEk?: string;
    }
  | { variant: 'qemu-vtpm'; measurements: Measurements; eventPolicy?: EventPolicy };

/**
 * The verifier policy this configuration pins. `options.measurements` replaces the measurements
 * (verify's report-only set); `options.enforceEventPolicy: false` leaves the event policy to the
 * caller (verify reports its violations instead of refusing the connection).
 */
export function attestationPolicy(
  attestation: ClusterAttestation,
  measurements?: Measurements,
  options: { enforceEventPolicy?: boolean } = {},
): AttestationPolicy {
  const m = measurements ?? attestation.measurements;
  const events =
    options.enforceEventPolicy === false || attestation.eventPolicy === undefined
      ? {}
      : { eventPolicy: attestation.eventPolicy };
  if (attestation.variant === 'qemu-vtpm') return { variant: 'qemu-vtpm', measurements: m, ...events };
  return {
    variant: 'tpm2-ek',
    measurements: m,
    ...events,
    ekRoots: pemCertificatesToDer(attestation.ekRoots),
    ekIntermediates: pemCertificatesToDer(attestation.ekIntermediates),
  };
}

const schema = z.strictObject({
  name: z
    .string()
    .regex(
      /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/,
      'must be a lowercase DNS label (a-z, 0-9, -), at most 63 characters',
    ),
  // A new cluster runs one of the maintained releases (SUPPORTED_KUBERNETES_MINORS).
  kubernetesVersion: z.string().superRefine((version, context) => {
    const problem = unsupportedKubernetesVersion(version);
    if (problem !== undefined) context.addIssue({ code: 'custom', message: problem });
  }),
  initEndpoint: z.string().regex(/^[^:\s]+:\d{1,5}$/, 'must be host:port of the first control-plane node'),
  apiServerCertSans: z
    .array(z.string().refine((s) => isIP(s) !== 0 || /^[a-zA-Z0-9.-]+$/.test(s), 'must be an IP address or DNS name'))
    .default([]),
  serviceCidr: z
    .string()
    .regex(/^[0-9a-fA-F.:]+\/\d{1,3}$/, 'must be a CIDR like 10.96.0.0/12')
    .default('10.96.0.0/12'),
  attestation: z.discriminatedUnion('variant', [
    z.strictObject({
      variant: z.literal('tpm2-ek'),
      ekCertificateAuthorities: z.strictObject({
        roots: z.string().refine(isPemBundle, 'must hold at least one PEM certificate (the EK CA roots to pin)'),
        intermediates: z
          .string()
          .refine((s) => s.trim() === '' || isPemBundle(s), 'must hold PEM certificates, or be empty')
          .default(''),
      }),
      firstControlPlaneEk: z
        .string()
        .regex(
          /^sha256:[0-9a-f]{64}$/,
          'must be sha256: and 64 lower-case hex digits (the EK hash of the machine at initEndpoint)',
        )
        .optional(),
      measurements: z.record(z.string(), z.unknown()),
      eventPolicy: z.unknown().optional(),
    }),
    z.strictObject({
      variant: z.literal('qemu-vtpm'),
      measurements: z.record(z.string(), z.unknown()),
      eventPolicy: z.unknown().optional(),
    }),
  ]),
});

function isPemBundle(text: string): boolean {
  try {
    return pemCertificatesToDer(text).length > 0;
  } catch {
    return false;
  }
}

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
  let eventPolicy: EventPolicy | undefined;
  try {
    // The rule every reader of measurements obeys (checkMeasurementPolicy), a boot measurement
    // included: with PCR 15 alone, init sent the master secret to any software on a genuine TPM
    // and verify called it matching (red-team finding). The event policy, read by the same parser
    // as the JoinService's attestationConfig, names its field on error.
    ({ measurements, eventPolicy } = parseAttestationFile(
      JSON.stringify({
        measurements: parsed.data.attestation.measurements,
        ...(parsed.data.attestation.eventPolicy === undefined
          ? {}
          : { eventPolicy: parsed.data.attestation.eventPolicy }),
      }),
      `${path}: attestation`,
    ));
  } catch (err) {
    throw new UsageError(errorMessage(err));
  }
  const attestation = parsed.data.attestation;
  const events = eventPolicy === undefined ? {} : { eventPolicy };
  return {
    ...parsed.data,
    attestation:
      attestation.variant === 'qemu-vtpm'
        ? { variant: 'qemu-vtpm', measurements, ...events }
        : {
            variant: 'tpm2-ek',
            measurements,
            ...events,
            ekRoots: attestation.ekCertificateAuthorities.roots,
            ekIntermediates: attestation.ekCertificateAuthorities.intermediates,
            ...(attestation.firstControlPlaneEk === undefined
              ? {}
              : { firstControlPlaneEk: attestation.firstControlPlaneEk.slice('sha256:'.length) }),
          },
  };
}

const indentBlock = (pem: string, indent: string): string =>
  pem
    .trim()
    .split('\n')
    .map((line) => `${indent}${line}`)
    .join('\n');

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
    `# Kubernetes version the nodes install: a release of ${SUPPORTED_KUBERNETES_MINORS.map((m) => `v${m}`).join(', ')}.`,
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
    ...attestationYaml(config.attestation),
    '  # PCR index -> expected SHA-256 value. PCR 15 must be zero until the node joins a cluster.',
    '  # warnOnly: true reports a mismatch without refusing the node.',
    `  measurements:${measurements === '' ? ' {}' : `\n${measurements}`}`,
    ...eventPolicyYaml(config.attestation.eventPolicy),
    '',
  ].join('\n');
}

/** The event policy block (docs/attestation.md, "Event log"), or a commented example. */
function eventPolicyYaml(policy: EventPolicy | undefined): string[] {
  const comment = [
    "  # Rules on the events of the node's TCG event log, checked once the log replays to the quote:",
    '  # secureBoot: enabled; kernelCommandLines: [exact lines]; bootApplications: [SHA-256 of',
    '  # EV_EFI_BOOT_SERVICES_APPLICATION events in PCR 4]; pcrEventDigests: {"<pcr>": [SHA-256 of',
    '  # every event of that PCR]}. `constellation config measurements from-eventlog` writes them.',
  ];
  if (policy === undefined) return [...comment, '  # eventPolicy:', '  #   secureBoot: enabled'];
  const body = stringify({ eventPolicy: policy }, { indent: 2 })
    .trimEnd()
    .split('\n')
    .map((line) => `  ${line}`);
  return [...comment, ...body];
}

function attestationYaml(attestation: ClusterAttestation): string[] {
  if (attestation.variant === 'qemu-vtpm') {
    return [
      '  # qemu-vtpm checks PCR values only and trusts any attestation key: anyone who knows the',
      '  # expected values passes it without a TPM. Use tpm2-ek wherever TPMs have EK certificates.',
      '  variant: qemu-vtpm',
    ];
  }
  const block = (pem: string): string => (pem.trim() === '' ? ' ""' : ` |\n${indentBlock(pem, '      ')}`);
  return [
    "  # tpm2-ek: each node's TPM proves who it is with its endorsement key (EK) certificate, which",
    '  # must chain to one of these pinned roots, and credential activation ties its quotes to it.',
    '  variant: tpm2-ek',
    '  ekCertificateAuthorities:',
    "    # PEM root certificates of the EK CAs (your TPM vendor's, or your platform's).",
    `    roots:${block(attestation.ekRoots)}`,
    '    # PEM intermediates that TPMs do not send themselves (optional).',
    `    intermediates:${block(attestation.ekIntermediates)}`,
    "  # EK hash of the machine at initEndpoint (the platform's record of it): init sends the master",
    '  # secret to that machine only. Without it, any genuine machine running the image would do.',
    attestation.firstControlPlaneEk === undefined
      ? '  # firstControlPlaneEk: sha256:<64 hex digits>'
      : `  firstControlPlaneEk: sha256:${attestation.firstControlPlaneEk}`,
  ];
}
