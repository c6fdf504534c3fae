/*
 * What `kubeadm init --config` does with each document of its file, by group, version and kind
 * (Kubernetes 1.32, cmd/kubeadm/app/util/config/initconfiguration.go
 * documentMapToInitConfiguration, common.go validateSupportedVersion,
 * util/config/strict/strict.go VerifyUnmarshalStrict, componentconfigs/configset.go
 * FetchFromDocumentMap). The documents are taken in the order of their GVK strings.
 *
 * - a kubeadm API version older than v1beta3: refused ("uses an old API spec");
 * - a GVK neither kubeadm's scheme nor the component-config scheme knows: a warning ("unknown
 *   configuration ..."; init does not make strict errors fatal), then by kind:
 *   - InitConfiguration or ClusterConfiguration (kubeadm matches on the kind alone): refused, the
 *     universal decoder has no such kind in that version;
 *   - a kind in a component-config group (kubelet.config.k8s.io, kubeproxy.config.k8s.io):
 *     refused after the loop, when FetchFromDocumentMap decodes it;
 *   - anything else: "[config] WARNING: Ignored YAML document with GroupVersionKind ..." and
 *     skipped;
 * - a known GVK that is neither InitConfiguration nor ClusterConfiguration nor a component config
 *   (JoinConfiguration, ResetConfiguration, UpgradeConfiguration): checked strictly (problems are
 *   warnings), then the same "Ignored" warning.
 *
 * The stand-in models v1beta4 and KubeletConfiguration v1beta1 only. kubeadm 1.32 still reads
 * v1beta3 (with a deprecation warning) and KubeProxyConfiguration; the stand-in refuses both,
 * stricter than kubeadm, never more lenient.
 */

export interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}

/**
 * What init does with one document, after warning "unknown configuration" when `unknown`:
 * decode it; check it strictly (problems are warnings), then warn that it is ignored; only warn
 * that it is ignored; refuse it at once; or refuse it once every document has been through.
 */
export type InitDocumentVerdict = { unknown: boolean } & (
  { action: 'decode' | 'check-and-ignore' | 'ignore' } | { action: 'refuse' | 'refuse-after-loop'; message: string }
);

const KUBEADM_GROUP = 'kubeadm.k8s.io';
const KUBEADM_VERSION = 'v1beta4';
const KUBELET_GROUP = 'kubelet.config.k8s.io';
const KUBELET_VERSION = 'v1beta1';
const KUBE_PROXY_GROUP = 'kubeproxy.config.k8s.io';

/** validateSupportedVersion's oldKnownAPIVersions: the kubeadm release to migrate with. */
const OLD_KUBEADM_VERSIONS: Record<string, string> = {
  'kubeadm.k8s.io/v1alpha1': 'v1.11',
  'kubeadm.k8s.io/v1alpha2': 'v1.12',
  'kubeadm.k8s.io/v1alpha3': 'v1.14',
  'kubeadm.k8s.io/v1beta1': 'v1.15',
  'kubeadm.k8s.io/v1beta2': 'v1.22',
};

/** The kinds kubeadm's scheme registers in v1beta4 (cmd/kubeadm/app/apis/kubeadm/v1beta4/register.go). */
const KUBEADM_KINDS = [
  'InitConfiguration',
  'ClusterConfiguration',
  'JoinConfiguration',
  'ResetConfiguration',
  'UpgradeConfiguration',
];

/** runtime.NewScheme's names: the file and line that made each scheme. */
const KUBEADM_SCHEME = 'k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/scheme/scheme.go:31';
const COMPONENT_CONFIG_SCHEME = 'k8s.io/kubernetes/cmd/kubeadm/app/componentconfigs/scheme.go:28';

/**
 * Where klog says the warnings come from: the strict check's line as the stand-in has always
 * printed it, and the "Ignored" line as kubeadm v1.32.2 prints it.
 */
export const STRICT_WARNING_SOURCE = 'initconfiguration.go:306';
export const IGNORED_WARNING_SOURCE = 'initconfiguration.go:361';

/** schema.GroupVersionKind's String(): "group/version, Kind=kind". */
export const gvkString = (gvk: GroupVersionKind): string => `${gvk.group}/${gvk.version}, Kind=${gvk.kind}`;

/** Go's %#v of a schema.GroupVersionKind. */
export const gvkGoSyntax = (gvk: GroupVersionKind): string =>
  `schema.GroupVersionKind{Group:"${gvk.group}", Version:"${gvk.version}", Kind:"${gvk.kind}"}`;

/** Whether kubeadm's scheme or the component-config scheme can make an object of this GVK. */
function recognized(gvk: GroupVersionKind): boolean {
  if (gvk.group === KUBEADM_GROUP) return gvk.version === KUBEADM_VERSION && KUBEADM_KINDS.includes(gvk.kind);
  if (gvk.group === KUBELET_GROUP) return gvk.version === KUBELET_VERSION && gvk.kind === 'KubeletConfiguration';
  return gvk.group === KUBE_PROXY_GROUP && gvk.version === 'v1alpha1' && gvk.kind === 'KubeProxyConfiguration';
}

/** VerifyUnmarshalStrict's error for a GVK no scheme knows, which init logs as a warning. */
export const unknownConfigurationWarning = (gvk: GroupVersionKind): string =>
  `unknown configuration ${gvkGoSyntax(gvk)}`;

/** documentMapToInitConfiguration's warning for a document it does not read. */
export const ignoredDocumentWarning = (gvk: GroupVersionKind): string =>
  `[config] WARNING: Ignored YAML document with GroupVersionKind ${gvkString(gvk)}`;

/** documentMapToInitConfiguration's treatment of one document. */
export function initDocumentVerdict(gvk: GroupVersionKind): InitDocumentVerdict {
  const groupVersion = `${gvk.group}/${gvk.version}`;
  const old = OLD_KUBEADM_VERSIONS[groupVersion];
  if (old !== undefined)
    return {
      unknown: false,
      action: 'refuse',
      message: `your configuration file uses an old API spec: "${groupVersion}" (kind: "${gvk.kind}"). Please use kubeadm ${old} instead and run 'kubeadm config migrate --old-config old.yaml --new-config new.yaml', which will write the new, similar spec using a newer API version.`,
    };
  if (gvk.group === KUBEADM_GROUP && gvk.version === 'v1beta3')
    return {
      unknown: false,
      action: 'refuse',
      message: `the kubeadm stand-in reads ${KUBEADM_GROUP}/${KUBEADM_VERSION} only, not "${groupVersion}" (kind: "${gvk.kind}"); run 'kubeadm config migrate' to convert it`,
    };
  if (gvk.group === KUBE_PROXY_GROUP)
    return {
      unknown: false,
      action: 'refuse',
      message: `the kubeadm stand-in does not model kube-proxy: "${groupVersion}" (kind: "${gvk.kind}") is not supported`,
    };
  const unknown = !recognized(gvk);
  if (gvk.kind === 'InitConfiguration' || gvk.kind === 'ClusterConfiguration') {
    // kubeadmutil.GroupVersionKindsHasInitConfiguration matches the kind alone; the decoder then
    // has no such kind in that group and version.
    if (!unknown) return { unknown, action: 'decode' };
    return {
      unknown,
      action: 'refuse',
      message: `no kind "${gvk.kind}" is registered for version "${groupVersion}" in scheme "${KUBEADM_SCHEME}"`,
    };
  }
  if (gvk.group === KUBELET_GROUP) {
    if (!unknown) return { unknown, action: 'decode' };
    // FetchFromDocumentMap -> configBase.Unmarshal: another version is an
    // UnsupportedConfigVersionError; another kind in v1beta1 fails runtime.DecodeInto.
    return {
      unknown,
      action: 'refuse-after-loop',
      message:
        gvk.version !== KUBELET_VERSION
          ? `unsupported apiVersion "${groupVersion}", you may have to do manual conversion to "${KUBELET_GROUP}/${KUBELET_VERSION}" and run kubeadm again`
          : `no kind "${gvk.kind}" is registered for version "${groupVersion}" in scheme "${COMPONENT_CONFIG_SCHEME}"`,
    };
  }
  return { unknown, action: unknown ? 'ignore' : 'check-and-ignore' };
}
