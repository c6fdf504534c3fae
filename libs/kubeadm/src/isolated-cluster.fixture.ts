import * as k8s from '@kubernetes/client-node';
import { startIsolatedControlPlane } from '@constellation/control-plane';
import { locateKubernetesPrograms } from '@constellation/kubernetes-programs';
import type { IsolatedControlPlane } from '@constellation/control-plane';
import { createTempDir, kubernetesBinDir } from '@constellation/testing';

/**
 * A real control plane of the test's own (its own kube-system: bootstrap tokens, cluster-wide RBAC),
 * as kubeadm init leaves it (upload-config and bootstrap-token phases run, with the init
 * configuration libs/kubeadm generates). `stop` stops every program and removes its files.
 */
export interface IsolatedCluster {
  controlPlane: IsolatedControlPlane;
  /** kubeadm's super-admin.conf (system:masters). */
  admin: k8s.KubeConfig;
  stop(): Promise<void>;
}

export async function startIsolatedCluster(): Promise<IsolatedCluster> {
  const dir = await createTempDir('constellation-kubeadm-cluster-');
  let controlPlane: IsolatedControlPlane;
  try {
    controlPlane = await startIsolatedControlPlane({
      programs: await locateKubernetesPrograms(kubernetesBinDir()),
      dir: dir.path,
      startTimeoutMs: 90_000,
    });
  } catch (error) {
    await dir.remove();
    throw error;
  }
  const admin = new k8s.KubeConfig();
  admin.loadFromFile(controlPlane.superAdminKubeconfig);
  return {
    controlPlane,
    admin,
    stop: async () => {
      await controlPlane.stop();
      await dir.remove();
    },
  };
}
