import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'yaml';
import { locateKubernetesPrograms, startControlPlane } from '@constellation/control-plane';
import type { ControlPlane } from '@constellation/control-plane';
import type { Credential } from './https-json.js';
import { standinPaths } from './paths.js';
import { BIN_DIR_ENV, NETNS_ENV } from './standin-env.js';

/*
 * The real control plane in place of the kubelet's static pods: real kubeadm's phases on the
 * node's own configuration file, then etcd, kube-apiserver, kube-controller-manager and
 * kube-scheduler as detached processes (they outlive `kubeadm init`, like static pods), from the
 * manifests kubeadm wrote (see standin-env.ts for where the programs and the network come from).
 */

export interface ControlPlaneRun {
  /** The directory holding the built programs. */
  binDir: string;
  /** The network namespace to run in; undefined: this process's own. */
  netns: string | undefined;
}

/** Where the stand-in is told to find the programs and which namespace to use; fails naming the variable. */
export function controlPlaneRun(env: NodeJS.ProcessEnv = process.env): ControlPlaneRun {
  const binDir = env[BIN_DIR_ENV];
  if (binDir === undefined || binDir === '')
    throw new Error(
      `the kubeadm stand-in runs the real control plane from $${BIN_DIR_ENV}; set it to the directory \`node tools/kubernetes/build.mjs\` prints`,
    );
  const netns = env[NETNS_ENV];
  return { binDir, netns: netns === undefined || netns === '' ? undefined : netns };
}

/**
 * Runs kubeadm's certs, kubeconfig, etcd and control-plane phases with `--rootfs <root>` on the
 * configuration `configText`, starts the four programs and waits for /readyz. The upload phases
 * are left to the caller, after the kubelet's registration.
 */
export async function startNodeControlPlane(
  root: string,
  configText: string,
  advertise: { ip: string; port: number },
  run: ControlPlaneRun,
): Promise<ControlPlane> {
  const programs = await locateKubernetesPrograms(run.binDir);
  return startControlPlane({
    programs,
    dir: standinPaths(root).run,
    root,
    network: { ...(run.netns === undefined ? {} : { namespace: run.netns }), ip: advertise.ip },
    apiServerPort: advertise.port,
    kubeadmConfig: configText,
    uploadPhases: false,
  });
}

/** The client certificate and key a kubeconfig kubeadm wrote embeds (kubelet.conf, admin.conf). */
export async function kubeconfigCredential(path: string): Promise<Exclude<Credential, undefined | { token: string }>> {
  const config = parse(await readFile(path, 'utf8')) as {
    users?: { user?: { 'client-certificate-data'?: string; 'client-key-data'?: string } }[];
  } | null;
  const user = config?.users?.[0]?.user;
  const cert = user?.['client-certificate-data'];
  const key = user?.['client-key-data'];
  if (cert === undefined || key === undefined) throw new Error(`${path} embeds no client certificate and key`);
  return { cert: Buffer.from(cert, 'base64').toString(), key: Buffer.from(key, 'base64').toString() };
}

/** kubeadm's own file for `name` under the node's root (admin.conf, kubelet.conf, super-admin.conf). */
export const kubeadmFile = (root: string, name: string): string => join(standinPaths(root).kubernetes, name);
