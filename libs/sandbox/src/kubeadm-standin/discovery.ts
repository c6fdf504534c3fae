import { createHash, X509Certificate } from 'node:crypto';
import { parse } from 'yaml';
import { detachedTokenIsValid } from '../bootstrap-jws.js';
import type { ResolvedJoin } from './config-defaults.js';
import { httpsJson } from './https-json.js';

/*
 * Token discovery as kubeadm join does it (cmd/kubeadm/app/discovery/token/token.go
 * RetrieveValidatedConfigInfo): fetch kube-public/cluster-info anonymously without trusting the
 * server, wait until the bootstrap signer has added `jws-kubeconfig-<token id>`, check that
 * detached JWS with the token, check the CA in it against the pins, then fetch cluster-info
 * again over TLS verified by that CA and require the same kubeconfig.
 */

/** A discovery failure, with kubeadm's message. */
export class DiscoveryError extends Error {
  override readonly name = 'DiscoveryError';
}

export interface DiscoveredCluster {
  /** The API server URL from the cluster-info kubeconfig. */
  server: string;
  caPem: string;
}

const CLUSTER_INFO_PATH = '/api/v1/namespaces/kube-public/configmaps/cluster-info';
/** constants.DiscoveryRetryInterval is 5 s; the stand-in polls faster to keep tests quick. */
const RETRY_MS = 200;

/** pubkeypin.Set.Allow: "sha256:<64 hex>", format and hex in any case; kept lower-case. */
export function pinSet(hashes: readonly string[]): Set<string> {
  const pins = new Set<string>();
  for (const hash of hashes) {
    const parts = hash.split(':');
    if (parts.length !== 2)
      throw new DiscoveryError(
        'invalid discovery token CA certificate hash: invalid hash, expected "format:hex-value". Known format(s) are: sha256',
      );
    const [format = '', value = ''] = parts;
    if (format.toLowerCase() !== 'sha256')
      throw new DiscoveryError(
        `invalid discovery token CA certificate hash: unknown hash format "${format}". Known format(s) are: sha256`,
      );
    if (value.length / 2 !== 32)
      throw new DiscoveryError(
        `invalid discovery token CA certificate hash: invalid hash "${hash}", expected a 32 byte SHA-256 hash, found ${Math.floor(value.length / 2)} bytes`,
      );
    if (!/^[0-9a-fA-F]*$/.test(value))
      throw new DiscoveryError(
        `invalid discovery token CA certificate hash: invalid hash "${hash}", could not decode SHA-256 from hex`,
      );
    pins.add(value.toLowerCase());
  }
  return pins;
}

/** pubkeypin.Hash of a certificate: sha256 of its SubjectPublicKeyInfo. */
function spkiHash(pem: string): string {
  const der = new X509Certificate(pem).publicKey.export({ type: 'spki', format: 'der' });
  return createHash('sha256').update(der).digest('hex');
}

/** getClusterInfo: polls until the ConfigMap carries a signature for the token id, or times out. */
async function clusterInfo(
  url: string,
  tokenId: string,
  ca: string | undefined,
  deadline: number,
): Promise<Record<string, string>> {
  for (;;) {
    let lastError: string;
    try {
      const res = await httpsJson(url, { ...(ca === undefined ? {} : { ca }), timeoutMs: 5_000 });
      const data = (res.body as { data?: Record<string, string> } | undefined)?.data;
      if (res.status !== 200 || data === undefined)
        lastError = `failed to request the cluster-info ConfigMap: status ${res.status}`;
      else if (data[`jws-kubeconfig-${tokenId}`] === undefined)
        lastError = `could not find a JWS signature in the cluster-info ConfigMap for token ID "${tokenId}"`;
      else return data;
    } catch (err) {
      lastError = `failed to request the cluster-info ConfigMap: ${err instanceof Error ? err.message : String(err)}`;
    }
    if (Date.now() >= deadline) throw new DiscoveryError(lastError);
    await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
  }
}

function kubeconfigCluster(text: string): { server: string; caPem: string } {
  let parsed: unknown;
  try {
    parsed = parse(text);
  } catch (err) {
    throw new DiscoveryError(
      `couldn't parse the kubeconfig file in the cluster-info ConfigMap: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  const cluster = (parsed as { clusters?: { cluster?: { server?: string; 'certificate-authority-data'?: string } }[] })
    .clusters?.[0]?.cluster;
  if (cluster?.server === undefined)
    throw new DiscoveryError('malformed kubeconfig in the cluster-info ConfigMap: no cluster or server');
  return {
    server: cluster.server,
    caPem: Buffer.from(cluster['certificate-authority-data'] ?? '', 'base64').toString(),
  };
}

/** RetrieveValidatedConfigInfo, printing kubeadm's discovery lines. */
export async function discoverCluster(join: ResolvedJoin, print: (line: string) => void): Promise<DiscoveredCluster> {
  const deadline = Date.now() + join.discoveryTimeoutMs;
  const url = `https://${join.apiServerEndpoint}${CLUSTER_INFO_PATH}`;
  const [tokenId = '', tokenSecret = ''] = join.token.split('.');
  print(`[discovery] Created cluster-info discovery client, requesting info from "${join.apiServerEndpoint}"`);
  const insecure = await clusterInfo(url, tokenId, undefined, deadline);
  const pins = pinSet(join.caCertHashes);
  // validateClusterInfoToken
  const kubeconfig = insecure['kubeconfig'];
  if (kubeconfig === undefined || kubeconfig === '')
    throw new DiscoveryError(
      "there is no kubeconfig key in the cluster-info ConfigMap. This API Server isn't set up for token bootstrapping, can't connect",
    );
  const signature = insecure[`jws-kubeconfig-${tokenId}`] ?? '';
  if (signature === '')
    throw new DiscoveryError(
      `token id "${tokenId}" is invalid for this cluster or it has expired. Use "kubeadm token create" on the control-plane node to create a new valid token`,
    );
  if (!detachedTokenIsValid(signature, kubeconfig, tokenId, tokenSecret))
    throw new DiscoveryError(
      "failed to verify JWS signature of received cluster info object, can't trust this API Server",
    );
  const cluster = kubeconfigCluster(kubeconfig);
  if (pins.size === 0) {
    print(
      `[discovery] Cluster info signature and contents are valid and no TLS pinning was specified, will use API Server "${join.apiServerEndpoint}"`,
    );
    return cluster;
  }
  // validateClusterCA
  let hashes: string[];
  try {
    hashes = [spkiHash(cluster.caPem)];
  } catch (err) {
    throw new DiscoveryError(
      `failed to parse cluster CA from the cluster-info ConfigMap: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  if (!hashes.some((h) => pins.has(h)))
    throw new DiscoveryError(
      `cluster CA found in cluster-info ConfigMap is invalid: none of the public keys "${hashes.map((h) => `sha256:${h}`).join(':')}" are pinned`,
    );
  print(
    `[discovery] Requesting info from "${join.apiServerEndpoint}" again to validate TLS against the pinned public key`,
  );
  const secure = await clusterInfo(url, tokenId, cluster.caPem, deadline);
  if (secure['kubeconfig'] !== kubeconfig)
    throw new DiscoveryError(
      'the second kubeconfig from the cluster-info ConfigMap (using validated TLS) was different from the first',
    );
  print(
    `[discovery] Cluster info signature and contents are valid and TLS certificate validates against pinned roots, will use API Server "${join.apiServerEndpoint}"`,
  );
  return cluster;
}
