import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { DEFAULT_TOKEN_GROUPS, DEFAULT_TOKEN_USAGES } from './config-defaults.js';
import { loadInitConfig, loadJoinConfig } from './config-load.js';
import { ConfigError } from './config-schema.js';
import { DiscoveryError, pinSet } from './discovery.js';

// The kubeadm stand-in decodes, defaults and validates like kubeadm v1beta4. Each case names the
// kubeadm rule it mirrors (cmd/kubeadm/app/apis/kubeadm/validation/validation.go unless noted).

const API = 'kubeadm.k8s.io/v1beta4';
const PIN = `sha256:${'ab'.repeat(32)}`;

function initYaml(init: Record<string, unknown> = {}, cluster: Record<string, unknown> = {}): string {
  return [
    {
      apiVersion: API,
      kind: 'InitConfiguration',
      nodeRegistration: { name: 'cp-0', criSocket: 'unix:///run/containerd/containerd.sock' },
      localAPIEndpoint: { advertiseAddress: '10.0.0.1', bindPort: 6443 },
      ...init,
    },
    { apiVersion: API, kind: 'ClusterConfiguration', kubernetesVersion: 'v1.32.9', ...cluster },
  ]
    .map((d) => stringify(d))
    .join('---\n');
}

function joinYaml(bootstrapToken: Record<string, unknown> = {}, extra: Record<string, unknown> = {}): string {
  return stringify({
    apiVersion: API,
    kind: 'JoinConfiguration',
    nodeRegistration: { name: 'worker-1', criSocket: 'unix:///run/containerd/containerd.sock' },
    discovery: {
      bootstrapToken: {
        apiServerEndpoint: '10.0.0.1:6443',
        token: 'abcdef.0123456789abcdef',
        caCertHashes: [PIN],
        ...bootstrapToken,
      },
    },
    ...extra,
  });
}

const warnings: string[] = [];
const warn = (line: string): void => {
  warnings.push(line);
};
const init = (text: string): ReturnType<typeof loadInitConfig> => loadInitConfig(text, warn);
const join = (text: string): ReturnType<typeof loadJoinConfig> => loadJoinConfig(text, warn);
const refusal = (load: () => unknown): string => {
  try {
    load();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError');
};

describe('defaults (v1beta4 defaults.go, bootstraptoken/v1 defaults.go)', () => {
  it('SetDefaults_BootstrapTokens: no bootstrapTokens means one random token, 24 h, signing+authentication, node group', () => {
    const before = Date.now();
    const { init: config } = init(initYaml());
    expect(config.bootstrapTokens).toHaveLength(1);
    const [token] = config.bootstrapTokens;
    expect(`${token?.id ?? ''}.${token?.secret ?? ''}`).toMatch(/^[a-z0-9]{6}\.[a-z0-9]{16}$/);
    expect(token?.usages).toEqual(DEFAULT_TOKEN_USAGES);
    expect(token?.groups).toEqual(DEFAULT_TOKEN_GROUPS);
    expect((token?.expires?.getTime() ?? 0) - before).toBeGreaterThanOrEqual(24 * 3600_000 - 1_000);
    // An empty list is defaulted the same way.
    expect(init(initYaml({ bootstrapTokens: [] })).init.bootstrapTokens).toHaveLength(1);
  });

  it('SetDefaults_APIEndpoint: a missing bindPort is 6443', () => {
    expect(init(initYaml({ localAPIEndpoint: { advertiseAddress: '10.0.0.1' } })).init.bindPort).toBe(6443);
  });

  it('ValidateTokenGroups: usages without authentication keep the defaulted group, which kubeadm refuses', () => {
    expect(refusal(() => init(initYaml({ bootstrapTokens: [{ usages: ['signing'] }] })))).toContain(
      'bootstrapTokens[0].groups: Invalid value: ["system:bootstrappers:kubeadm:default-node-token"]: token groups cannot be specified unless --usages includes "authentication"',
    );
  });
});

describe('decoding (strict.go, metav1.Duration, metav1.Time)', () => {
  it('VerifyUnmarshalStrict: unknown fields are warnings, not errors', () => {
    warnings.length = 0;
    init(initYaml({ surprise: 1 }, { networking: { serviceSubnet: '10.96.0.0/12', extra: true } }));
    expect(warnings.join('\n')).toContain('strict decoding error: unknown field "surprise"');
    expect(warnings.join('\n')).toContain('strict decoding error: unknown field "networking.extra"');
  });

  it('an unparseable token ttl or expiry is a decode error', () => {
    expect(refusal(() => init(initYaml({ bootstrapTokens: [{ ttl: 'tomorrow' }] })))).toContain(
      'time: invalid duration "tomorrow"',
    );
    expect(refusal(() => init(initYaml({ bootstrapTokens: [{ expires: 'soon' }] })))).toContain('parsing time "soon"');
    expect(init(initYaml({ bootstrapTokens: [{ ttl: '1h30m' }] })).init.bootstrapTokens[0]?.expires).toBeDefined();
  });

  it('ValidateBootstrapTokens: ttl and expires are mutually exclusive; a malformed token is invalid', () => {
    expect(
      refusal(() => init(initYaml({ bootstrapTokens: [{ ttl: '1h', expires: '2030-01-01T00:00:00Z' }] }))),
    ).toContain('the BootstrapToken .TTL and .Expires fields are mutually exclusive');
    expect(refusal(() => init(initYaml({ bootstrapTokens: [{ token: 'ABCDEF.0123456789abcdef' }] })))).toContain(
      'bootstrapTokens[0].token: Invalid value: "ABCDEF.0123456789abcdef": the bootstrap token is invalid',
    );
  });
});

describe('ValidateNodeRegistrationOptions / ValidateSocketPath', () => {
  it('SetNodeRegistrationDynamicDefaults / nodeutil.GetHostname: the name is trimmed and lower-cased before validation', () => {
    expect(init(initYaml({ nodeRegistration: { name: ' CP-0 ' } })).init.nodeRegistration.name).toBe('cp-0');
    expect(join(joinYaml({}, { nodeRegistration: { name: 'Worker-1' } })).nodeRegistration.name).toBe('worker-1');
  });

  it('refuses node names that are not DNS-1123 subdomains', () => {
    expect(refusal(() => init(initYaml({ nodeRegistration: { name: 'Node_1' } })))).toContain(
      'nodeRegistration.name: Invalid value: "node_1": a lowercase RFC 1123 subdomain',
    );
  });

  it('refuses a CRI socket with another URL scheme; a bare path gets unix:// with a warning', () => {
    expect(
      refusal(() => init(initYaml({ nodeRegistration: { name: 'cp-0', criSocket: 'npipe:////./pipe/containerd' } }))),
    ).toContain(
      'nodeRegistration.criSocket: Invalid value: "npipe:////./pipe/containerd": only URL scheme "unix" is supported, got "npipe"',
    );
    warnings.length = 0;
    const { init: config } = init(
      initYaml({ nodeRegistration: { name: 'cp-0', criSocket: '/run/containerd/containerd.sock' } }),
    );
    expect(config.nodeRegistration.criSocket).toBe('unix:///run/containerd/containerd.sock');
    expect(warnings.join('\n')).toContain('Usage of CRI endpoints without URL scheme is deprecated');
  });
});

describe('ValidateAPIEndpoint, ValidateHostPort, ValidateDiscoveryTokenAPIServer', () => {
  it('ValidateIPFromString: the advertise address must be an IP', () => {
    expect(
      refusal(() => init(initYaml({ localAPIEndpoint: { advertiseAddress: 'cp.example.com', bindPort: 6443 } }))),
    ).toContain('localAPIEndpoint.advertiseAddress: Invalid value: "cp.example.com": ip address is not valid');
    expect(
      init(initYaml({ localAPIEndpoint: { advertiseAddress: 'fd00::1', bindPort: 6443 } })).init.advertiseAddress,
    ).toBe('fd00::1');
  });

  it('ParseHostPort: IPv6 control-plane endpoints in brackets, hosts without port; bad ports refused', () => {
    expect(init(initYaml({}, { controlPlaneEndpoint: '[fd00::1]:6443' })).cluster.controlPlaneEndpoint).toBe(
      '[fd00::1]:6443',
    );
    expect(init(initYaml({}, { controlPlaneEndpoint: 'cp.example.com' })).cluster.controlPlaneEndpoint).toBe(
      'cp.example.com',
    );
    expect(refusal(() => init(initYaml({}, { controlPlaneEndpoint: 'cp:99999' })))).toContain(
      'controlPlaneEndpoint: Invalid value: "cp:99999": endpoint is not valid',
    );
  });

  it('net.SplitHostPort: a discovery endpoint needs a port; IPv6 in brackets', () => {
    expect(join(joinYaml({ apiServerEndpoint: '[fd00::1]:6443' })).apiServerEndpoint).toBe('[fd00::1]:6443');
    expect(refusal(() => join(joinYaml({ apiServerEndpoint: 'fd00::1:6443' })))).toContain(
      'too many colons in address',
    );
    expect(refusal(() => join(joinYaml({ apiServerEndpoint: '10.0.0.1' })))).toContain('missing port in address');
  });
});

describe('ValidateCertSANs, ValidateNetworking, version, skipPhases', () => {
  it('ValidateCertSANs: IPs, DNS names and wildcards; anything else refused', () => {
    expect(
      init(initYaml({}, { apiServer: { certSANs: ['10.0.0.9', 'fd00::9', 'api.example.com', '*.example.com'] } })),
    ).toBeDefined();
    expect(refusal(() => init(initYaml({}, { apiServer: { certSANs: ['bad_san'] } })))).toContain(
      'apiServer.certSANs: Invalid value: "bad_san": altname is not a valid IP address, DNS label or a DNS label with subdomain wildcards',
    );
  });

  it('ValidateIPNetFromString / ValidateServiceSubnetSize', () => {
    expect(refusal(() => init(initYaml({}, { networking: { serviceSubnet: 'nonsense' } })))).toContain(
      `networking.serviceSubnet: Invalid value: "nonsense": couldn't parse subnet`,
    );
    expect(refusal(() => init(initYaml({}, { networking: { serviceSubnet: '10.0.0.0/8' } })))).toContain(
      'specified service subnet is too large; for 32-bit addresses, the mask must be >= 12',
    );
    expect(refusal(() => init(initYaml({}, { networking: { serviceSubnet: '10.0.0.0/30' } })))).toContain(
      'subnet with 4 address(es) is too small, the minimum is 10',
    );
    expect(init(initYaml({}, { networking: { serviceSubnet: '10.96.0.0/16,fd00::/112' } })).cluster.serviceSubnet).toBe(
      '10.96.0.0/16,fd00::/112',
    );
  });

  it('KubernetesReleaseVersion: release candidates and versions without "v" are versions', () => {
    expect(init(initYaml({}, { kubernetesVersion: 'v1.33.0-rc.1' })).cluster.kubernetesVersion).toBe('v1.33.0-rc.1');
    expect(init(initYaml({}, { kubernetesVersion: '1.32.9' })).cluster.kubernetesVersion).toBe('v1.32.9');
    expect(refusal(() => init(initYaml({}, { kubernetesVersion: 'one.two' })))).toContain(
      `version "one.two" doesn't match patterns for neither semantic version nor labels`,
    );
  });

  it('workflow/runner.go computePhaseRunFlags: an unknown phase to skip is an error', () => {
    expect(init(initYaml({ skipPhases: ['addon/kube-proxy'] })).init.skipPhases).toEqual(['addon/kube-proxy']);
    expect(refusal(() => init(initYaml({ skipPhases: ['addon/kube-nonsense'] })))).toBe(
      'invalid phase name: addon/kube-nonsense',
    );
    expect(join(joinYaml({}, { skipPhases: ['control-plane-prepare/download-certs'] })).skipPhases).toHaveLength(1);
    expect(refusal(() => join(joinYaml({}, { skipPhases: ['download-certs'] })))).toBe(
      'invalid phase name: download-certs',
    );
  });
});

describe('ValidatePodSubnetNodeMask, ValidateExtraArgs, ValidateCertificateKey', () => {
  it('ValidatePodSubnetNodeMask: the pod subnet must hold whole node subnets (default /24, /64), at most 2^16 of them', () => {
    expect(init(initYaml({}, { networking: { podSubnet: '10.244.0.0/16' } })).cluster.podSubnet).toBe('10.244.0.0/16');
    expect(refusal(() => init(initYaml({}, { networking: { podSubnet: '10.244.0.0/25' } })))).toBe(
      'networking.podSubnet: Invalid value: "10.244.0.0/25": the size of pod subnet with mask 25 is smaller than the size of node subnet with mask 24',
    );
    expect(refusal(() => init(initYaml({}, { networking: { podSubnet: 'fd00::/40' } })))).toBe(
      'networking.podSubnet: Invalid value: "fd00::/40": pod subnet mask (40) and node-mask (64) difference is greater than 16',
    );
    // The node mask comes from kube-controller-manager's flag; allocate-node-cidrs=false skips the rule.
    const nodeMask = (args: { name: string; value: string }[]): Record<string, unknown> => ({
      networking: { podSubnet: '10.244.0.0/25' },
      controllerManager: { extraArgs: args },
    });
    expect(init(initYaml({}, nodeMask([{ name: 'node-cidr-mask-size-ipv4', value: '26' }]))).cluster.podSubnet).toBe(
      '10.244.0.0/25',
    );
    expect(init(initYaml({}, nodeMask([{ name: 'allocate-node-cidrs', value: 'false' }]))).cluster.podSubnet).toBe(
      '10.244.0.0/25',
    );
  });

  it('ValidateExtraArgs: every argument needs a name', () => {
    expect(refusal(() => init(initYaml({}, { apiServer: { extraArgs: [{ name: '', value: 'x' }] } })))).toBe(
      'apiServer.extraArgs: Invalid value: "index 0": argument has no name',
    );
    expect(
      refusal(() =>
        join(
          joinYaml(
            {},
            {
              nodeRegistration: {
                name: 'worker-1',
                kubeletExtraArgs: [
                  { name: 'v', value: '2' },
                  { name: '', value: '' },
                ],
              },
            },
          ),
        ),
      ),
    ).toBe('nodeRegistration.kubeletExtraArgs: Invalid value: "index 1": argument has no name');
  });

  it('ValidateCertificateKey: a hex-encoded 32-byte AES key', () => {
    const controlPlane = (certificateKey: string): Record<string, unknown> => ({
      controlPlane: { localAPIEndpoint: { advertiseAddress: '10.0.0.2', bindPort: 6443 }, certificateKey },
    });
    expect(join(joinYaml({}, controlPlane('ab'.repeat(32)))).controlPlane).toBeDefined();
    expect(refusal(() => join(joinYaml({}, controlPlane('ab'.repeat(16)))))).toBe(
      `controlPlane.certificateKey: Invalid value: "${'ab'.repeat(16)}": invalid certificate key size 16, the key must be an AES key of size 32`,
    );
    expect(refusal(() => join(joinYaml({}, controlPlane('xyz'))))).toBe(
      'controlPlane.certificateKey: Invalid value: "xyz": certificate key decoding error: encoding/hex: invalid byte: U+0078 \'x\'',
    );
    expect(refusal(() => init(initYaml({ certificateKey: 'abc' })))).toBe(
      'certificateKey: Invalid value: "abc": certificate key decoding error: encoding/hex: odd length hex string',
    );
  });
});

describe('ValidateIgnorePreflightErrors', () => {
  it('names are case-insensitive; "all" may not come with individual checks', () => {
    expect(join(joinYaml({}, {})).nodeRegistration.ignorePreflightErrors).toEqual([]);
    const named = join(
      joinYaml({}, { nodeRegistration: { name: 'worker-1', ignorePreflightErrors: ['Port-6443', 'port-6443'] } }),
    );
    expect(named.nodeRegistration.ignorePreflightErrors).toEqual(['port-6443']);
    expect(
      refusal(() =>
        init(initYaml({ nodeRegistration: { name: 'cp-0', ignorePreflightErrors: ['all', 'Port-6443'] } })),
      ),
    ).toBe(
      "ignore-preflight-errors: Invalid value: \"all,port-6443\": don't specify individual checks if 'all' is used",
    );
  });
});

describe('ValidateDiscoveryBootstrapToken and pubkeypin', () => {
  it('no caCertHashes needs unsafeSkipCAVerification', () => {
    expect(refusal(() => join(joinYaml({ caCertHashes: [] })))).toContain(
      'using token-based discovery without caCertHashes can be unsafe',
    );
    expect(join(joinYaml({ caCertHashes: [], unsafeSkipCAVerification: true })).unsafeSkipCAVerification).toBe(true);
  });

  it('pubkeypin.Set.Allow: format and hex in any case, stored lower-case; malformed pins refused', () => {
    expect([...pinSet([`SHA256:${'AB'.repeat(32)}`])]).toEqual(['ab'.repeat(32)]);
    expect(() => pinSet([`md5:${'ab'.repeat(16)}`])).toThrow(DiscoveryError);
    expect(() => pinSet(['ab'.repeat(32)])).toThrow(/expected "format:hex-value"/);
    expect(() => pinSet([`sha256:${'zz'.repeat(32)}`])).toThrow(/could not decode SHA-256 from hex/);
  });
});

describe('join reads only its JoinConfiguration (cmd/kubeadm/app/util/config/joinconfiguration.go)', () => {
  const kubelet = (extra: Record<string, unknown>): string =>
    stringify({ apiVersion: 'kubelet.config.k8s.io/v1beta1', kind: 'KubeletConfiguration', ...extra });

  it('documentMapToJoinConfiguration: any other kind is skipped undecoded and without a warning', () => {
    warnings.length = 0;
    // A KubeletConfiguration is not read at join (the kubelet's comes from the kubelet-config
    // ConfigMap): fields of any type, unknown fields and other component configs pass unseen.
    const text = [
      joinYaml(),
      kubelet({ staticPodPath: 42, noSuchField: true }),
      stringify({ apiVersion: 'kubeproxy.config.k8s.io/v1alpha1', kind: 'KubeProxyConfiguration', mode: [] }),
    ].join('---\n');
    expect(join(text).nodeRegistration.name).toBe('worker-1');
    expect(warnings).toEqual([]);
  });

  it('SplitYAMLDocuments (cmd/kubeadm/app/util/marshal.go) still checks every document: group, version and kind present, no kind twice', () => {
    // %+v of the *schema.GroupVersionKind prints its String() (apimachinery runtime/schema
    // group_version.go), as real kubeadm prints "GroupVersionKind /, Kind=InitConfiguration".
    expect(refusal(() => join([joinYaml(), stringify({ apiVersion: 'v1', kind: 'ConfigMap' })].join('---\n')))).toBe(
      'invalid configuration for GroupVersionKind /v1, Kind=ConfigMap: kind and apiVersion is mandatory information that must be specified',
    );
    expect(refusal(() => join([joinYaml(), kubelet({}), kubelet({})].join('---\n')))).toBe(
      'invalid configuration: kind "KubeletConfiguration" is specified twice in YAML file',
    );
  });
});

describe('nodeRegistration.taints (initconfiguration.go SetNodeRegistrationDynamicDefaults, joinconfiguration.go SetJoinDynamicDefaults)', () => {
  const controlPlaneTaint = [{ key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' }];
  const registration = { name: 'cp-0', criSocket: 'unix:///run/containerd/containerd.sock' };

  it('init: unset (nil) is the control-plane taint; an explicit empty list is none; a list is kept as given', () => {
    expect(init(initYaml()).init.nodeRegistration.taints).toEqual(controlPlaneTaint);
    // `taints: null` decodes to a nil slice, as an absent field does.
    expect(
      init(initYaml({ nodeRegistration: { ...registration, taints: null } })).init.nodeRegistration.taints,
    ).toEqual(controlPlaneTaint);
    expect(init(initYaml({ nodeRegistration: { ...registration, taints: [] } })).init.nodeRegistration.taints).toEqual(
      [],
    );
    const own = [{ key: 'dedicated', value: 'infra', effect: 'NoExecute' }];
    expect(init(initYaml({ nodeRegistration: { ...registration, taints: own } })).init.nodeRegistration.taints).toEqual(
      own,
    );
  });

  it('join: the control-plane taint is the default only with a controlPlane section', () => {
    expect(join(joinYaml()).nodeRegistration.taints).toEqual([]);
    const controlPlane = { controlPlane: { certificateKey: 'ab'.repeat(32) } };
    expect(join(joinYaml({}, controlPlane)).nodeRegistration.taints).toEqual(controlPlaneTaint);
    const none = { ...controlPlane, nodeRegistration: { name: 'cp-1', taints: [] } };
    expect(join(joinYaml({}, none)).nodeRegistration.taints).toEqual([]);
  });

  it('a taint is a core/v1 Taint: a field of the wrong type is a decode error', () => {
    const bad = { nodeRegistration: { ...registration, taints: [{ key: 'a', effect: 7 }] } };
    expect(refusal(() => init(initYaml(bad)))).toMatch(
      /^InitConfiguration: strict decoding error: nodeRegistration\.taints\.0\.effect: /,
    );
  });
});
