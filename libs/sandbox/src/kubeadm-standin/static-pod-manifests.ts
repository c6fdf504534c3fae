import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';

/*
 * kubeadm init's control-plane and etcd phases write one static Pod manifest per component into
 * /etc/kubernetes/manifests (cmd/kubeadm/app/phases/controlplane/manifests.go,
 * phases/etcd/local.go); their presence is what makes a second `kubeadm init` fail preflight.
 * The stand-in runs one process in their place, so its manifests only name the component and say
 * so; nothing reads their spec.
 */

export const STATIC_POD_COMPONENTS = ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'etcd'] as const;

export async function writeStaticPodManifests(dir: string, kubernetesVersion: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const component of STATIC_POD_COMPONENTS) {
    const manifest = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: component,
        namespace: 'kube-system',
        labels: { component, tier: 'control-plane' },
        annotations: { 'sandbox.constellation/stand-in': `served by the kubeadm stand-in's API server process` },
      },
      spec: {
        hostNetwork: true,
        priorityClassName: 'system-node-critical',
        containers: [{ name: component, image: `stand-in/${component}:${kubernetesVersion}`, command: [component] }],
      },
    };
    await writeFile(join(dir, `${component}.yaml`), stringify(manifest), { mode: 0o600 });
  }
}
