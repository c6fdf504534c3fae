import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kubectl, locateKubernetesPrograms, startIsolatedControlPlane } from '@constellation/control-plane';
import type { IsolatedControlPlane } from '@constellation/control-plane';
import { kubernetesBinDir } from '@constellation/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerNode } from './kubelet-registration.js';
import { issueClientCredential } from './pki.js';

let dir: string;
let controlPlane: IsolatedControlPlane | undefined;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kubelet-registration-'));
  controlPlane = await startIsolatedControlPlane({ programs: await locateKubernetesPrograms(kubernetesBinDir()), dir });
}, 120_000);

afterAll(async () => {
  await controlPlane?.stop();
  await rm(dir, { recursive: true, force: true });
}, 60_000);

describe('the kubelet registers its Node', () => {
  it('with the --register-with-taints a worker join passes it (cmd/kubeadm/app/phases/kubelet/flags.go, registerTaintsUsingFlags)', async () => {
    if (controlPlane === undefined) throw new Error('no control plane');
    // pkg/kubelet/kubelet_node_status.go initialNode puts registerWithTaints on the new Node; the
    // real NodeRestriction lets a kubelet set taints when it creates its Node.
    const kubelet = await issueClientCredential(controlPlane.pkiDir, 'system:node:worker-t', ['system:nodes']);
    const taints = [{ key: 'dedicated', value: 'batch', effect: 'NoSchedule' }];
    await registerNode(
      controlPlane.apiServerUrl,
      controlPlane.caCertificatePem,
      { cert: kubelet.certPem, key: kubelet.keyPem },
      'worker-t',
      undefined,
      taints,
    );
    const admin = new Kubectl(await locateKubernetesPrograms(kubernetesBinDir()), controlPlane.superAdminKubeconfig);
    const node = await admin.json<{ spec: { taints?: { key: string }[] } }>(['get', 'node', 'worker-t']);
    // The real node lifecycle controller may have added its own (node.kubernetes.io/not-ready).
    expect(node.spec.taints?.filter((t) => !t.key.startsWith('node.kubernetes.io/'))).toEqual(taints);
  }, 60_000);
});
