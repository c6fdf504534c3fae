import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { attestationFileToJson } from '@constellation/attestation';
import type { Kubectl } from '@constellation/kubernetes-programs';
import { readClusterState } from '../cluster-state.js';
import { loadClusterConfig } from '../constellation-conf.js';
import { workspaceFiles } from '../workspace.js';
import type { MiniArtifacts } from './artifacts.js';
import type { MiniState } from './mini-state.js';
import { joinServiceImageName } from './node-images.js';

type Manifest = Record<string, unknown> & { kind?: string };

interface DaemonSetShape {
  spec: { template: { spec: { containers: { image: string; imagePullPolicy?: string; args: string[] }[] } } };
}

/**
 * deploy/joinservice's DaemonSet for this cluster: the image the nodes carry (never pulled), and
 * the instance registry at mini's metadata server. Nothing else differs from the manifest.
 */
function forMini(manifest: Manifest, image: string, registryUrl: string): Manifest {
  if (manifest.kind !== 'DaemonSet') return manifest;
  const daemonSet = structuredClone(manifest) as Manifest & DaemonSetShape;
  for (const container of daemonSet.spec.template.spec.containers) {
    container.image = image;
    container.imagePullPolicy = 'Never';
    container.args = container.args.map((arg) =>
      arg.startsWith('--instance-registry-url=') ? `--instance-registry-url=${registryUrl}` : arg,
    );
  }
  return daemonSet;
}

/**
 * What the JoinService's DaemonSet mounts, as the cluster's deployment creates it after init: the
 * join-config ConfigMap (measurements, measurement salt, pinned EK CA certificates) and the
 * constellation-mastersecret Secret.
 */
async function joinServiceInputs(workspace: string): Promise<Manifest[]> {
  const files = workspaceFiles(workspace);
  const config = await loadClusterConfig(files.config);
  const cluster = await readClusterState(files.state);
  if (cluster === undefined) throw new Error(`no cluster state at ${files.state}: init has not finished`);
  // The EK CA the nodes were manufactured with, as pinned in the config (the cluster's or mini's vendor's).
  const { attestation } = config;
  if (attestation.variant !== 'tpm2-ek')
    throw new Error(`mini's config attests with ${attestation.variant}, not tpm2-ek`);
  return [
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'join-config', namespace: 'kube-system' },
      data: {
        attestationConfig: JSON.stringify(
          attestationFileToJson(config.attestation.measurements, config.attestation.eventPolicy),
        ),
        ekRoots: attestation.ekRoots,
        ekIntermediates: attestation.ekIntermediates,
      },
      // 32 raw bytes.
      binaryData: { measurementSalt: cluster.measurementSalt },
    },
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'constellation-mastersecret', namespace: 'kube-system' },
      type: 'Opaque',
      data: { 'mastersecret.json': (await readFile(files.masterSecret)).toString('base64') },
    },
  ];
}

/**
 * Deploys the JoinService as a real cluster runs it: its ConfigMap and Secret, then
 * deploy/joinservice's ServiceAccount, RBAC and DaemonSet, applied with the admin kubeconfig. The
 * kubelet of every control plane starts its pod from the image in the node's containerd.
 */
export async function deployJoinService(options: {
  workspace: string;
  state: MiniState;
  artifacts: MiniArtifacts;
  admin: Kubectl;
}): Promise<void> {
  const { artifacts, state } = options;
  const manifests: Manifest[] = await joinServiceInputs(options.workspace);
  for (const name of ['serviceaccount.yaml', 'rbac.yaml', 'daemonset.yaml']) {
    const text = await readFile(join(artifacts.joinserviceManifests, name), 'utf8');
    for (const doc of parseAllDocuments(text)) {
      manifests.push(forMini(doc.toJS() as Manifest, joinServiceImageName(artifacts), state.metadataUrl));
    }
  }
  await options.admin.apply(manifests.map((m) => stringify(m)).join('---\n'));
}
