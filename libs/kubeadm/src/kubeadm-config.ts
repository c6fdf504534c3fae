import { stringify } from 'yaml';
import { ADMISSION_CONFIG_DIR, ADMISSION_CONFIG_FILE } from './pod-security-admission.js';
import { apiServerCertSans } from './api-server-alt-names.js';
import { initBootstrapTokens } from './init-bootstrap-token.js';
import { kubeProxyConfiguration } from './kube-proxy-config.js';
import type { KubeProxyFields } from './kube-proxy-config.js';
import { KUBELET_SERVING_CERT_FILE, KUBELET_SERVING_KEY_FILE } from './kubelet-paths.js';

/*
 * kubeadm configuration (API kubeadm.k8s.io/v1beta4) generated from typed input. v1beta4 writes
 * extra arguments as lists of {name, value}. Only fields we set are emitted, so the output stays
 * valid for kubeadm's strict decoding.
 */

export const KUBEADM_API = 'kubeadm.k8s.io/v1beta4';
export const KUBELET_API = 'kubelet.config.k8s.io/v1beta1';
export const CRI_SOCKET = 'unix:///run/containerd/containerd.sock';

type Args = { name: string; value: string }[];
const args = (record: Record<string, string>): Args => Object.entries(record).map(([name, value]) => ({ name, value }));

/**
 * What a node image sets for every kubeadm run on it, beside what the cluster decides: images it
 * carries preloaded, kubeadm patches that tune its kubelet or control plane to the machine, and
 * preflight checks that do not apply to it.
 */
export interface KubeadmNodeOptions {
  /** kubeadm's --patches directory (files like kubeletconfiguration+merge.yaml), as kubeadm sees it. */
  patchesDir?: string;
  /** Preflight checks whose errors kubeadm reports as warnings (kubeadm's names, e.g. SystemVerification). */
  ignorePreflightErrors?: readonly string[];
  /** Never: the image holds every image kubeadm deploys, and no registry is contacted. */
  imagePullPolicy?: 'Always' | 'IfNotPresent' | 'Never';
  /**
   * KubeProxyConfiguration fields for the machine (parseKubeProxyConfiguration checked them), e.g.
   * the proxy mode its kernel supports: given to `kubeadm init` when the cluster runs kube-proxy.
   * Joins take the cluster's kube-proxy ConfigMap.
   */
  kubeProxy?: KubeProxyFields;
}

export interface InitConfigInput {
  nodeName: string;
  nodeIp: string;
  /** Port the API server binds on this node (6443 in production). */
  bindPort: number;
  clusterName: string;
  kubernetesVersion: string;
  /** host:port clients use for the control plane (load balancer). */
  controlPlaneEndpoint: string;
  certSans: readonly string[];
  serviceCidr?: string;
  /** Keep kube-proxy (conformance mode). */
  kubeProxy: boolean;
  node?: KubeadmNodeOptions;
}

export interface JoinConfigInput {
  nodeName: string;
  nodeIp: string;
  /**
   * The discovery kubeconfig as kubeadm reads it (discoveryKubeconfig: the cluster CA and the
   * kubelet's client certificate from the join ticket); its server is the endpoint joined.
   */
  discoveryFile: string;
  /** Set for control-plane joins: where this node's API server binds. */
  controlPlane?: { bindPort: number };
  node?: KubeadmNodeOptions;
}

/** nodeRegistration fields from the node image's options; only those set are emitted. */
function nodeRegistrationOptions(node: KubeadmNodeOptions | undefined): Record<string, unknown> {
  return {
    ...(node?.ignorePreflightErrors === undefined || node.ignorePreflightErrors.length === 0
      ? {}
      : { ignorePreflightErrors: [...node.ignorePreflightErrors] }),
    ...(node?.imagePullPolicy === undefined ? {} : { imagePullPolicy: node.imagePullPolicy }),
  };
}

const patches = (node: KubeadmNodeOptions | undefined): Record<string, unknown> =>
  node?.patchesDir === undefined ? {} : { patches: { directory: node.patchesDir } };

function kubeletConfiguration(): Record<string, unknown> {
  return {
    apiVersion: KUBELET_API,
    kind: 'KubeletConfiguration',
    protectKernelDefaults: true,
    staticPodPath: '/etc/kubernetes/manifests',
    tlsCipherSuites: [
      'TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256',
      'TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384',
      'TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305',
      'TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256',
      'TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384',
      'TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305',
    ],
    tlsCertFile: KUBELET_SERVING_CERT_FILE,
    tlsPrivateKeyFile: KUBELET_SERVING_KEY_FILE,
  };
}

const documents = (docs: Record<string, unknown>[]): string => docs.map((doc) => stringify(doc)).join('---\n');

/**
 * InitConfiguration + ClusterConfiguration + KubeletConfiguration for `kubeadm init --config`, and
 * the node image's KubeProxyConfiguration when the cluster runs kube-proxy. Holds a fresh bootstrap
 * token (one that cannot join): write it with mode 0600.
 */
export function initConfiguration(input: InitConfigInput): string {
  const certSans = apiServerCertSans(input);
  return documents([
    {
      apiVersion: KUBEADM_API,
      kind: 'InitConfiguration',
      nodeRegistration: {
        name: input.nodeName,
        criSocket: CRI_SOCKET,
        kubeletExtraArgs: args({ 'node-ip': input.nodeIp }),
        ...nodeRegistrationOptions(input.node),
      },
      ...patches(input.node),
      // Not kubeadm's default 24 h node token: one that cannot join (init-bootstrap-token.ts).
      bootstrapTokens: initBootstrapTokens(),
      localAPIEndpoint: { advertiseAddress: input.nodeIp, bindPort: input.bindPort },
      ...(input.kubeProxy ? {} : { skipPhases: ['addon/kube-proxy'] }),
    },
    {
      apiVersion: KUBEADM_API,
      kind: 'ClusterConfiguration',
      clusterName: input.clusterName,
      kubernetesVersion: input.kubernetesVersion,
      controlPlaneEndpoint: input.controlPlaneEndpoint,
      ...(input.serviceCidr === undefined ? {} : { networking: { serviceSubnet: input.serviceCidr } }),
      apiServer: {
        certSANs: certSans,
        extraArgs: args({
          profiling: 'false',
          'kubelet-certificate-authority': '/etc/kubernetes/pki/ca.crt',
          // Pod Security baseline by default (pod-security-admission.ts); the file is written on
          // every control plane before kubeadm runs.
          'admission-control-config-file': `/etc/kubernetes/${ADMISSION_CONFIG_FILE}`,
        }),
        extraVolumes: [
          {
            name: 'admission-config',
            hostPath: ADMISSION_CONFIG_DIR,
            mountPath: ADMISSION_CONFIG_DIR,
            readOnly: true,
            pathType: 'Directory',
          },
        ],
      },
      controllerManager: { extraArgs: args({ profiling: 'false', 'terminated-pod-gc-threshold': '1000' }) },
      scheduler: { extraArgs: args({ profiling: 'false' }) },
    },
    kubeletConfiguration(),
    ...(input.kubeProxy && input.node?.kubeProxy !== undefined ? [kubeProxyConfiguration(input.node.kubeProxy)] : []),
  ]);
}

/**
 * The JoinConfiguration for `kubeadm join --config`. Nothing else: kubeadm join skips every other
 * document of the file (documentMapToJoinConfiguration), and the joining kubelet gets the
 * KubeletConfiguration of the init file from the kubelet-config ConfigMap.
 */
export function joinConfiguration(input: JoinConfigInput): string {
  return documents([
    {
      apiVersion: KUBEADM_API,
      kind: 'JoinConfiguration',
      nodeRegistration: {
        name: input.nodeName,
        criSocket: CRI_SOCKET,
        kubeletExtraArgs: args({ 'node-ip': input.nodeIp }),
        ...nodeRegistrationOptions(input.node),
      },
      ...patches(input.node),
      // File discovery with the ticket's CA and the kubelet's own certificate: no bootstrap token.
      discovery: { file: { kubeConfigPath: input.discoveryFile } },
      ...(input.controlPlane === undefined
        ? {}
        : {
            controlPlane: {
              localAPIEndpoint: { advertiseAddress: input.nodeIp, bindPort: input.controlPlane.bindPort },
            },
            // The shared PKI arrived in the join ticket; kubeadm must not download certificates.
            skipPhases: ['control-plane-prepare/download-certs'],
          }),
    },
  ]);
}
