import { describe, expect, it } from 'vitest';
import { clusterConfigMap, parseClusterConfig } from './cluster-config.js';
import type { ClusterConfig } from './cluster-config.js';
import { DEFAULT_KUBERNETES_VERSION } from './kubernetes-version.js';

const CONFIG: ClusterConfig = {
  kubernetesVersion: DEFAULT_KUBERNETES_VERSION,
  components: [],
  apiServer: { dnsNames: ['kubernetes', 'api.example.test'], ips: ['10.96.0.1', 'fd00::2'] },
};

describe('the cluster configuration ConfigMap', () => {
  it("carries the API server's names and addresses and reads them back", () => {
    expect(parseClusterConfig(clusterConfigMap(CONFIG).data)).toEqual(CONFIG);
  });

  it('reads a configuration published before the names were (no apiServer)', () => {
    const { apiServer: _published, ...older } = CONFIG;
    const data = clusterConfigMap(older).data;
    expect(data).not.toHaveProperty('apiServerAltNames');
    expect(parseClusterConfig(data)).toEqual(older);
  });

  it('reads the version a cluster was initialised with even when that release is no longer supported', () => {
    // Nodes keep joining a cluster whose release has aged out; the supported list is for new clusters.
    expect(
      parseClusterConfig(clusterConfigMap({ ...CONFIG, kubernetesVersion: 'v1.32.9' }).data).kubernetesVersion,
    ).toBe('v1.32.9');
    expect(() => parseClusterConfig({ ...clusterConfigMap(CONFIG).data, kubernetesVersion: 'latest' })).toThrow(
      `ConfigMap constellation-cluster: kubernetesVersion must look like ${DEFAULT_KUBERNETES_VERSION}, got "latest"`,
    );
  });

  it('refuses names that are not what it wrote, naming the field', () => {
    const data = (apiServerAltNames: string): Record<string, string> => ({
      ...clusterConfigMap(CONFIG).data,
      apiServerAltNames,
    });
    expect(() => parseClusterConfig(data('{'))).toThrow(
      'ConfigMap constellation-cluster: apiServerAltNames is not JSON',
    );
    expect(() => parseClusterConfig(data('{"dnsNames":[]}'))).toThrow(
      'apiServerAltNames needs dnsNames and ips (arrays of strings)',
    );
    expect(() => parseClusterConfig(data('{"dnsNames":[],"ips":["10.96.0.1","api"]}'))).toThrow(
      'apiServerAltNames: ips[1] must be an IP address, got "api"',
    );
  });
});
