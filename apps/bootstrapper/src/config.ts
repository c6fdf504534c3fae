import { readFile } from 'node:fs/promises';
import { InvalidArgumentError } from '@commander-js/extra-typings';
import { readPemCertificates } from '@constellation/attestation/pem-file';
import { UsageError, readOptionFile } from '@constellation/command-line';
import { DEFAULT_KUBERNETES_VERSION } from '@constellation/kubeadm/kubernetes-version';
import { parseKubeProxyConfiguration } from '@constellation/kubeadm/kube-proxy-config';
import type { KubeProxyFields } from '@constellation/kubeadm/kube-proxy-config';
import { errorMessage } from '@constellation/errors';
import { parseKubernetesVersion } from '@constellation/node-prep/kubernetes-version';
import { belowVersionFloor } from './kubernetes-version-floor.js';
import type { TpmAddress } from './tpm-address.js';

/**
 * The bootstrapper's documented defaults. The command line overrides the first group; the
 * second group are fixed timings and node-preparation paths that a node image never changes.
 */
export const BOOTSTRAPPER_DEFAULTS = {
  root: '/',
  tpm: '/dev/tpmrm0',
  attestationVariant: 'tpm2-ek',
  measuredPcrs: [4, 8, 9, 11, 12, 13],
  /** The firmware's TCG event log, as the kernel exposes it (securityfs). */
  eventLog: '/sys/kernel/security/tpm0/binary_bios_measurements',
  /** The bootstrapper's own events (the PCR 15 mark), on /run: gone at reboot, as the PCRs are. */
  runtimeEventLog: '/run/constellation/runtime-event-log',
  stateDisk: '/dev/disk/by-partlabel/state',
  metadataUrl: 'http://10.42.0.1:8080',
  initHost: '0.0.0.0',
  initPort: 9000,
  verifyPort: 30081,
  recoveryPort: 9999,
  keyring: '/etc/constellation/pubring.asc',
  kubeadm: 'kubeadm',
  apiServerBindPort: 6443,
  kubernetesVersion: DEFAULT_KUBERNETES_VERSION,
  kubeletStartCommand: 'systemctl start kubelet',
  imagePullPolicy: 'IfNotPresent',
  joinBackoffMaxMs: 30_000,

  joinInitialBackoffMs: 1_000,
  requestTimeoutMs: 30_000,
  kubeadmTimeoutMs: 10 * 60_000,
  nodePreparation: {
    osReleasePath: '/usr/lib/os-release',
    seedFile: '/etc/kubernetes/installer/kubelet.env',
    kubeletEnvPath: '/etc/kubernetes/kubelet.env',
    // One deadline for each whole fetch, all tries included: room for kubelet-sized downloads.
    retry: { tries: 5, pauseMs: 2_000, timeoutMs: 10 * 60_000 },
    apiRetry: { tries: 3, pauseMs: 5_000, timeoutMs: 10_000 },
  },
} as const;

export type AttestationVariantName = 'tpm2-ek' | 'qemu-vtpm';

/** The options as the command line parsed them (flags with defaults are always present). */
export interface BootstrapperFlags {
  root: string;
  tpm: TpmAddress;
  attestationVariant: AttestationVariantName;
  ekIntermediates?: string;
  ekRoots?: string;
  measuredPcrs: number[];
  /** The boot's TCG event log, sent with every attestation (under --root). */
  eventLog: string;
  /** The bootstrapper's own event log (under --root). */
  runtimeEventLog: string;
  stateDisk: string;
  diskKdf: 'default' | 'fast';
  /**
   * Map the state disk with dm-crypt and mount its file system here (under --root), with
   * /etc/kubernetes and /var/lib/kubelet bound from it; without it the disk's header is used
   * (key, token) and those directories are the root's own.
   */
  stateMount?: string;
  metadataUrl: string;
  nodeName?: string;
  initHost: string;
  initPort: number;
  verifyPort: number;
  recoveryPort: number;
  manifestUrl?: string;
  keyring: string;
  verifySignatures: boolean;
  kubeadm: string;
  apiServerBindPort: number;
  defaultKubernetesVersion: string;
  minimumKubernetesVersion?: string;
  kubeletStartCommand: string;
  /** kubeadm patches of the node image (kubeletconfiguration+merge.yaml, …), as kubeadm sees the path. */
  kubeadmPatches?: string;
  /** The node image's KubeProxyConfiguration fields (a YAML file on the host, not under --root). */
  kubeProxyConfig?: string;
  kubeadmIgnorePreflightErrors: string[];
  imagePullPolicy: 'Always' | 'IfNotPresent' | 'Never';
  joinBackoffMaxMs: number;
  onFatal: 'reboot' | 'exit';
}

/** The compiled configuration: flags checked and files read once, before any device is opened. */
export interface BootstrapperConfig extends BootstrapperFlags {
  /** Pinned EK CA roots (DER); empty with the unrooted variant. */
  ekRootCertificates: Buffer[];
  /** EK CA intermediates (DER) sent with the TPM's EK certificate. */
  ekIntermediateCertificates: Buffer[];
  /** --kube-proxy-config's fields, checked; undefined without the flag. */
  kubeProxyFields?: KubeProxyFields;
}

async function readPemOption(file: string | undefined, option: string, required: boolean): Promise<Buffer[]> {
  if (file === undefined) {
    if (!required) return [];
    throw new UsageError(
      `${option} is required with --attestation-variant=tpm2-ek: the node checks the JoinService's TPM identity against the pinned EK CA roots before it uses a join ticket`,
    );
  }
  return (await readOptionFile(option, () => readPemCertificates(file))).certificates;
}

/** Reads the files the flags name; a bad file is a usage error naming the flag. */
export async function compileConfig(flags: BootstrapperFlags): Promise<BootstrapperConfig> {
  const rooted = flags.attestationVariant === 'tpm2-ek';
  const belowFloor = belowVersionFloor(flags.defaultKubernetesVersion, flags.minimumKubernetesVersion);
  if (belowFloor !== undefined) throw new UsageError(`--default-kubernetes-version: ${belowFloor}`);
  const kubeProxyConfig = flags.kubeProxyConfig;
  return {
    ...flags,
    ekRootCertificates: rooted ? await readPemOption(flags.ekRoots, '--ek-roots', true) : [],
    ekIntermediateCertificates: await readPemOption(flags.ekIntermediates, '--ek-intermediates', false),
    ...(kubeProxyConfig === undefined
      ? {}
      : {
          kubeProxyFields: await readOptionFile('--kube-proxy-config', async () => {
            const text = await readFile(kubeProxyConfig, 'utf8');
            try {
              return parseKubeProxyConfiguration(text);
            } catch (err) {
              throw new Error(`${kubeProxyConfig}: ${errorMessage(err)}`, { cause: err });
            }
          }),
        }),
  };
}

/** `--minimum-kubernetes-version`: a version like v1.32.9. */
export function parseVersionOption(value: string): string {
  try {
    parseKubernetesVersion(value, 'the command line');
  } catch (err) {
    throw new InvalidArgumentError(errorMessage(err));
  }
  return value;
}

/** `--measured-pcrs`: comma-separated PCR indexes. */
export function parsePcrList(value: string): number[] {
  const pcrs = value.split(',').map((part) => Number(part.trim()));
  if (pcrs.length === 0 || pcrs.some((pcr) => !Number.isInteger(pcr) || pcr < 0 || pcr > 23))
    throw new InvalidArgumentError(`expected comma-separated PCR indexes from 0 to 23, got "${value}"`);
  return pcrs;
}

/** A comma-separated list of names (kubeadm's preflight check names: letters, digits, `.`, `_`, `-`). */
export function parseNameList(value: string, option: string): string[] {
  const names = value.split(',').map((part) => part.trim());
  const bad = names.find((name) => !/^[A-Za-z0-9._-]+$/.test(name));
  if (bad !== undefined)
    throw new InvalidArgumentError(
      `${option}: expected comma-separated names (letters, digits, '.', '_', '-'), got "${bad}" in "${value}"`,
    );
  return names;
}
