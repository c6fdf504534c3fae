export type { KubernetesProgram, KubernetesPrograms } from './kubernetes-programs.js';
export { KUBERNETES_PROGRAMS, locateKubernetesPrograms } from './kubernetes-programs.js';
export { Kubectl, tokenKubeconfig, writeServiceAccountKubeconfig } from './kubectl.js';
export type { ImageArchive, ImagesManifest } from './images-manifest.js';
export { archivePath, imagesDirBeside, readImagesManifest, sandboxImage } from './images-manifest.js';
