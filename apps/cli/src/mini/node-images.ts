import { archivePath, imagesDirBeside, readImagesManifest, sandboxImage } from '@constellation/kubernetes-programs';
import type { MiniArtifacts } from './artifacts.js';
import type { NodeImages } from './node-spec.js';

/** Where a repository's image name without a registry is looked up (the kubelet asks for that name). */
const normalised = (reference: string): string =>
  /^[^/]+[.:][^/]*\//.test(reference) || reference.startsWith('localhost/') ? reference : `docker.io/${reference}`;

/** Images kubeadm's add-ons run on any node: kube-proxy's DaemonSet (every node), CoreDNS's Deployment (wherever scheduled). */
const ADD_ON_IMAGES = ['/kube-proxy:', '/coredns:'];

/**
 * The images a mini node image carries (built beside the programs by `node tools/kubernetes/images.mjs`):
 * on every node the pod sandbox, a busybox for trying pods and kubeadm's add-ons (kube-proxy,
 * CoreDNS); on control planes also the control plane's and the JoinService's. No registry is
 * contacted: kubeadm runs with imagePullPolicy Never.
 */
export async function nodeImages(kubernetesBinDir: string, artifacts: MiniArtifacts): Promise<NodeImages> {
  const dir = imagesDirBeside(kubernetesBinDir);
  const manifest = await readImagesManifest(
    dir,
    'node tools/kubernetes/images.mjs',
    '(`npm run mini` does it for you)',
  );
  const sandbox = sandboxImage(manifest, dir);
  const everyNode = manifest.images.filter(
    (image) =>
      image === sandbox ||
      image.reference.includes('/busybox:') ||
      ADD_ON_IMAGES.some((name) => image.reference.includes(name)),
  );
  const joinService = artifacts.joinserviceImage;
  return {
    controlPlane: [...manifest.images.map((image) => archivePath(dir, image)), joinService.archive],
    worker: everyNode.map((image) => archivePath(dir, image)),
    tags: [[joinService.reference, normalised(joinService.reference)]],
    sandbox: sandbox.reference,
  };
}

/** The JoinService's image as the kubelet names it. */
export const joinServiceImageName = (artifacts: MiniArtifacts): string =>
  normalised(artifacts.joinserviceImage.reference);
