/**
 * Who may do what on the API stand-in: the RBAC objects a kubeadm cluster with Constellation's
 * manifests has, for the resources the stand-in serves. Each binding names the Kubernetes object
 * it mirrors. Node identities (system:node:<name>) are additionally handled by the Node
 * authorizer mirror in node-authorizer.ts, as kube-apiserver runs `--authorization-mode=Node,RBAC`.
 *
 * Keep the JoinService's entries equal to deploy/joinservice/rbac.yaml (a test compares them).
 */

/** A resource rule, as in rbac.authorization.k8s.io/v1 PolicyRule. "*" matches anything. */
export interface ResourceRule {
  apiGroups: readonly string[];
  resources: readonly string[];
  verbs: readonly string[];
  /** When set, only these object names (never lists or creates, which name no object). */
  resourceNames?: readonly string[];
}

/** A non-resource rule (paths such as /api or /version); a trailing "*" matches a prefix. */
export interface NonResourceRule {
  nonResourceURLs: readonly string[];
  verbs: readonly string[];
}

export interface Subject {
  kind: 'User' | 'Group';
  name: string;
}

export interface AuthorizationBinding {
  /** The (Cluster)RoleBinding this mirrors and where it comes from. */
  mirrors: string;
  subjects: readonly Subject[];
  /** A RoleBinding's namespace: the rules apply only there. Undefined for ClusterRoleBindings. */
  namespace?: string;
  rules: readonly ResourceRule[];
  nonResourceRules?: readonly NonResourceRule[];
  /**
   * The ClusterRoleBinding object's name when the stand-in keeps it in the API: the binding then
   * applies only while that object exists, so a cluster admin can delete it as on a real cluster.
   */
  clusterRoleBinding?: { name: string; clusterRole: string };
}

export const ANONYMOUS_USER = 'system:anonymous';
export const UNAUTHENTICATED_GROUP = 'system:unauthenticated';
export const AUTHENTICATED_GROUP = 'system:authenticated';
export const MASTERS_GROUP = 'system:masters';
export const KUBEADM_CLUSTER_ADMINS_GROUP = 'kubeadm:cluster-admins';
export const NODES_GROUP = 'system:nodes';
export const BOOTSTRAPPERS_GROUP = 'system:bootstrappers';
export const KUBEADM_NODE_TOKEN_GROUP = 'system:bootstrappers:kubeadm:default-node-token';
export const JOIN_SERVICE_ACCOUNT = { namespace: 'kube-system', name: 'join-service' } as const;
export const JOIN_SERVICE_USER = `system:serviceaccount:${JOIN_SERVICE_ACCOUNT.namespace}:${JOIN_SERVICE_ACCOUNT.name}`;

const group = (name: string): Subject => ({ kind: 'Group', name });
const user = (name: string): Subject => ({ kind: 'User', name });

export const AUTHORIZATION_BINDINGS: readonly AuthorizationBinding[] = [
  {
    // plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go: cluster-admin bound to
    // system:masters; kubeadm (>= 1.29) binds kubeadm:cluster-admins, admin.conf's group, to it too.
    mirrors: 'ClusterRoleBinding cluster-admin, ClusterRoleBinding kubeadm:cluster-admins',
    subjects: [group(MASTERS_GROUP), group(KUBEADM_CLUSTER_ADMINS_GROUP)],
    rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }],
    nonResourceRules: [{ nonResourceURLs: ['*'], verbs: ['*'] }],
  },
  {
    // bootstrappolicy: ClusterRole system:discovery, bound to system:authenticated.
    mirrors: 'ClusterRoleBinding system:discovery',
    subjects: [group(AUTHENTICATED_GROUP)],
    rules: [],
    nonResourceRules: [
      {
        nonResourceURLs: [
          '/api',
          '/api/*',
          '/apis',
          '/apis/*',
          '/healthz',
          '/livez',
          '/openapi',
          '/openapi/*',
          '/readyz',
          '/version',
          '/version/',
        ],
        verbs: ['get'],
      },
    ],
  },
  {
    // bootstrappolicy: ClusterRole system:public-info-viewer, bound to authenticated and unauthenticated.
    mirrors: 'ClusterRoleBinding system:public-info-viewer',
    subjects: [group(AUTHENTICATED_GROUP), group(UNAUTHENTICATED_GROUP)],
    rules: [],
    nonResourceRules: [{ nonResourceURLs: ['/healthz', '/livez', '/readyz', '/version', '/version/'], verbs: ['get'] }],
  },
  {
    // kubeadm phases/bootstraptoken/clusterinfo: Role kubeadm:bootstrap-signer-clusterinfo in kube-public.
    mirrors: 'RoleBinding kube-public/kubeadm:bootstrap-signer-clusterinfo',
    subjects: [user(ANONYMOUS_USER)],
    namespace: 'kube-public',
    rules: [{ apiGroups: [''], resources: ['configmaps'], resourceNames: ['cluster-info'], verbs: ['get'] }],
  },
  {
    // kubeadm phases/bootstraptoken/node: ClusterRole kubeadm:get-nodes for the default node token group.
    mirrors: 'ClusterRoleBinding kubeadm:get-nodes',
    subjects: [group(KUBEADM_NODE_TOKEN_GROUP)],
    rules: [{ apiGroups: [''], resources: ['nodes'], verbs: ['get'] }],
  },
  {
    // kubeadm phases/bootstraptoken/node: ClusterRoleBinding kubeadm:kubelet-bootstrap to ClusterRole
    // system:node-bootstrapper (bootstrappolicy): the kubelet's TLS bootstrap posts and reads its CSR.
    mirrors: 'ClusterRoleBinding kubeadm:kubelet-bootstrap',
    clusterRoleBinding: { name: 'kubeadm:kubelet-bootstrap', clusterRole: 'system:node-bootstrapper' },
    subjects: [group(KUBEADM_NODE_TOKEN_GROUP)],
    rules: [
      {
        apiGroups: ['certificates.k8s.io'],
        resources: ['certificatesigningrequests'],
        verbs: ['create', 'get', 'list', 'watch'],
      },
    ],
  },
  {
    // kubeadm phases/bootstraptoken/node: ClusterRoleBinding kubeadm:node-autoapprove-bootstrap
    // (ClusterRole system:certificates.k8s.io:certificatesigningrequests:nodeclient), asked by csrapproving.
    mirrors: 'ClusterRoleBinding kubeadm:node-autoapprove-bootstrap',
    clusterRoleBinding: {
      name: 'kubeadm:node-autoapprove-bootstrap',
      clusterRole: 'system:certificates.k8s.io:certificatesigningrequests:nodeclient',
    },
    subjects: [group(KUBEADM_NODE_TOKEN_GROUP)],
    rules: [
      { apiGroups: ['certificates.k8s.io'], resources: ['certificatesigningrequests/nodeclient'], verbs: ['create'] },
    ],
  },
  {
    // kubeadm phases/bootstraptoken/node: ClusterRoleBinding kubeadm:node-autoapprove-certificate-rotation
    // (ClusterRole ...:selfnodeclient) for nodes renewing their own client certificate.
    mirrors: 'ClusterRoleBinding kubeadm:node-autoapprove-certificate-rotation',
    subjects: [group(NODES_GROUP)],
    rules: [
      {
        apiGroups: ['certificates.k8s.io'],
        resources: ['certificatesigningrequests/selfnodeclient'],
        verbs: ['create'],
      },
    ],
  },
  {
    // kubeadm phases/uploadconfig: Role kubeadm:nodes-kubeadm-config (kube-system).
    mirrors: 'RoleBinding kube-system/kubeadm:nodes-kubeadm-config',
    subjects: [group(KUBEADM_NODE_TOKEN_GROUP), group(NODES_GROUP)],
    namespace: 'kube-system',
    rules: [{ apiGroups: [''], resources: ['configmaps'], resourceNames: ['kubeadm-config'], verbs: ['get'] }],
  },
  {
    // kubeadm phases/kubelet: Role kubeadm:kubelet-config (kube-system).
    mirrors: 'RoleBinding kube-system/kubeadm:kubelet-config',
    subjects: [group(KUBEADM_NODE_TOKEN_GROUP), group(NODES_GROUP)],
    namespace: 'kube-system',
    rules: [{ apiGroups: [''], resources: ['configmaps'], resourceNames: ['kubelet-config'], verbs: ['get'] }],
  },
  {
    // deploy/joinservice/rbac.yaml: Role + RoleBinding join-service (kube-system).
    mirrors: 'RoleBinding kube-system/join-service (deploy/joinservice/rbac.yaml)',
    subjects: [user(JOIN_SERVICE_USER)],
    namespace: 'kube-system',
    rules: [
      { apiGroups: [''], resources: ['secrets'], verbs: ['create', 'delete'] },
      { apiGroups: [''], resources: ['configmaps'], resourceNames: ['constellation-cluster'], verbs: ['get'] },
      { apiGroups: [''], resources: ['configmaps'], verbs: ['create', 'get'] },
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
      {
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        resourceNames: ['constellation-control-plane-join'],
        verbs: ['get', 'update', 'delete'],
      },
    ],
  },
  {
    // deploy/joinservice/rbac.yaml: ClusterRole + ClusterRoleBinding constellation:join-service.
    mirrors: 'ClusterRoleBinding constellation:join-service (deploy/joinservice/rbac.yaml)',
    subjects: [user(JOIN_SERVICE_USER)],
    rules: [{ apiGroups: [''], resources: ['nodes'], verbs: ['get'] }],
  },
];
