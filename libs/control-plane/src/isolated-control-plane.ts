import { startControlPlane } from './control-plane.js';
import type { ControlPlane, ControlPlaneOptions } from './control-plane.js';
import { createNetworkNamespace, deleteNetworkNamespace } from './network-namespace.js';
import type { NetworkNamespace } from './network-namespace.js';

/** A control plane with a network namespace of its own, which its stop() deletes. */
export interface IsolatedControlPlane extends ControlPlane {
  readonly namespace: NetworkNamespace;
}

/**
 * A fresh cluster's control plane in a new network namespace: for a test that must own
 * kube-system (its bootstrap tokens, its Leases) rather than share the run's control plane.
 */
export async function startIsolatedControlPlane(
  options: Omit<ControlPlaneOptions, 'network'>,
): Promise<IsolatedControlPlane> {
  const namespace = await createNetworkNamespace();
  let controlPlane: ControlPlane;
  try {
    controlPlane = await startControlPlane({ ...options, network: { namespace: namespace.name, ip: namespace.ip } });
  } catch (error) {
    await deleteNetworkNamespace(namespace);
    throw error;
  }
  let stopped: Promise<void> | undefined;
  return {
    ...controlPlane,
    namespace,
    stop: () => {
      stopped ??= controlPlane.stop().then(() => deleteNetworkNamespace(namespace));
      return stopped;
    },
  };
}
