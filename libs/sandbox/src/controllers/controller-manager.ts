import type { CertificateAuthority } from '@constellation/keys';
import type { KubeObjectStore, ResourceType } from '../kube-object-store.js';
import { AUTHORIZATION_BINDINGS } from '../kube-api/authorization-rules.js';
import { rbacAllows } from '../kube-api/rbac-authorizer.js';
import { BootstrapSigner } from './bootstrap-signer.js';
import { KubeletCsrController } from './kubelet-csr-controller.js';

/**
 * The part of kube-controller-manager a kubeadm join depends on, running against the stand-in's
 * store: bootstrapsigner + tokencleaner always; csrapproving + csrsigning for kubelet client
 * certificates when the cluster CA is given (--cluster-signing-cert-file / -key-file).
 */
export function startControllers(
  store: KubeObjectStore,
  types: readonly ResourceType[],
  clusterCa: CertificateAuthority | undefined,
  bindingExists: (name: string) => boolean = () => true,
): { stop: () => void } {
  const find = (resource: string): ResourceType => {
    const type = types.find((t) => t.resource === resource);
    if (type === undefined) throw new Error(`the API stand-in does not serve ${resource}`);
    return type;
  };
  const signer = new BootstrapSigner(store, { secrets: find('secrets'), configMaps: find('configmaps') });
  if (clusterCa !== undefined) {
    // sarapprove.go asks the authorizer whether the requester may create the subresource.
    const review = (user: { name: string; groups: readonly string[] }, subresource: string): boolean =>
      rbacAllows(
        {
          resourceRequest: true,
          user,
          verb: 'create',
          apiGroup: 'certificates.k8s.io',
          resource: 'certificatesigningrequests',
          subresource,
          namespace: '',
          name: '',
        },
        AUTHORIZATION_BINDINGS,
        bindingExists,
      );
    new KubeletCsrController(store, find('certificatesigningrequests'), clusterCa, review);
  }
  return {
    stop: () => {
      signer.stop();
    },
  };
}
