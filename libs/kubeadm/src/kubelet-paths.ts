// The kubelet's credential paths, apart from the configuration writer: a program that only needs
// the paths (the bootstrapper at start) does not load the YAML library with them.

/**
 * The kubelet's serving certificate and key (KubeletConfiguration tlsCertFile/tlsPrivateKeyFile),
 * profile of signer kubernetes.io/kubelet-serving. The bootstrapper writes them before kubeadm
 * starts the kubelet, on every node: with server certificate reload (default since 1.31) a kubelet
 * whose files are missing does not start.
 */
export const KUBELET_SERVING_CERT_FILE = '/run/state/kubelet/pki/kubelet-serving.crt';
export const KUBELET_SERVING_KEY_FILE = '/run/state/kubelet/pki/kubelet-serving.key';
/**
 * The kubelet's --cert-dir (its default). Its client credential lives there as
 * kubelet-client-current.pem, a symlink to kubelet-client-<time>.pem (certificate and key).
 */
export const KUBELET_CERT_DIR = '/var/lib/kubelet/pki';
