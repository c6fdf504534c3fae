import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { parse, stringify } from 'yaml';
import { getConfigMapWithShortRetry } from './config-map-short-retry.js';

/*
 * The kubelet's configuration as kubeadm hands it around. init writes the KubeletConfiguration of
 * its --config file to /var/lib/kubelet/config.yaml (kubelet-start) and real kubeadm's
 * upload-config/kubelet stores it, with its defaults filled in, in ConfigMap
 * kube-system/kubelet-config, key "kubelet" (cmd/kubeadm/app/phases/kubelet/config.go
 * CreateConfigMap). join never reads a KubeletConfiguration from its own file: its preflight
 * downloads that ConfigMap with the bootstrap token (cmd/kubeadm/app/util/config/cluster.go
 * getInitConfigurationFromCluster -> componentconfigs.FetchFromCluster; kubeletConfigFromCluster
 * with mustExist) and kubelet-start writes it to config.yaml.
 */

export type KubeletConfiguration = Record<string, unknown>;

const NAME = 'kubelet-config';
const KEY = 'kubelet';

/** The KubeletConfiguration kubeadm uses when the init file has none (its defaults, not spelled out). */
export const DEFAULT_KUBELET_CONFIGURATION: KubeletConfiguration = {
  apiVersion: 'kubelet.config.k8s.io/v1beta1',
  kind: 'KubeletConfiguration',
};

/** kubelet-start: /var/lib/kubelet/config.yaml (WriteConfigToDisk). */
export async function writeKubeletConfigFile(path: string, config: KubeletConfiguration): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, stringify(config), { mode: 0o644 });
}

/**
 * The cluster's KubeletConfiguration, read with the bootstrap token (fromConfigMap with
 * mustExist: GetConfigMapWithShortRetry, then the key); throws kubeadm's wrapped message.
 */
export async function fetchKubeletConfiguration(
  server: string,
  caPem: string,
  token: string,
): Promise<KubeletConfiguration> {
  const fail = (reason: string): Error =>
    new Error(
      `unable to fetch the kubeadm-config ConfigMap: failed to get component configs: could not download the kubelet configuration from ConfigMap "${NAME}": ${reason}`,
    );
  let data;
  try {
    data = await getConfigMapWithShortRetry(server, caPem, { token }, NAME);
  } catch (err) {
    throw fail(err instanceof Error ? err.message : String(err));
  }
  const text = data[KEY];
  if (text === undefined) throw fail(`unexpected error when reading ${NAME} ConfigMap: ${KEY} key value pair missing`);
  const document = parse(text) as unknown;
  if (document === null || typeof document !== 'object' || Array.isArray(document))
    throw fail(`the ${KEY} key holds no KubeletConfiguration`);
  return document as KubeletConfiguration;
}
