/** The Kubernetes version this release installs when the user names none. */
export const DEFAULT_KUBERNETES_VERSION = 'v1.32.9';
