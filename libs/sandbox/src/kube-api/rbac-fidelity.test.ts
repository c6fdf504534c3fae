import { describe, expect, it } from 'vitest';
import { JOIN_SERVICE_USER } from './authorization-rules.js';
import type { AuthorizationBinding } from './authorization-rules.js';
import { rbacAllows } from './rbac-authorizer.js';
import { resourceAttributes } from './request-attributes.js';

/*
 * Fidelity audit: RBAC resourceNames never grant a create. kube-apiserver authorizes a POST to a
 * collection with attributes built from the URL alone
 * (staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go NewRequestInfo: Name is set
 * only from the path, so it is "" for a create), and
 * plugin/pkg/auth/authorizer/rbac/rbac.go RuleAllows -> ResourceNameMatches compares
 * rule.ResourceNames with requestAttributes.GetName() (""), so a rule with resourceNames never
 * matches a create. The Kubernetes RBAC docs say the same ("You cannot restrict create or
 * deletecollection requests by their resource name"). The stand-in's resourceAttributes names a
 * create by its body (for NodeRestriction's sake), and rbacAllows matched resourceNames against
 * that body name until a fidelity audit.
 */

// What deploy/joinservice/rbac.yaml would look like if the lease rule folded `create` into the
// named rule: on a real cluster the JoinService could then no longer create its lease.
const namedCreate: AuthorizationBinding[] = [
  {
    mirrors: 'test: Role with resourceNames and create',
    subjects: [{ kind: 'User', name: JOIN_SERVICE_USER }],
    namespace: 'kube-system',
    rules: [
      {
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        resourceNames: ['constellation-control-plane-join'],
        verbs: ['create', 'get', 'update', 'delete'],
      },
    ],
  },
];

describe('RBAC resourceNames and create (rbac.go ResourceNameMatches)', () => {
  it('a rule restricted to resourceNames does not allow creating an object of that name', () => {
    const attributes = resourceAttributes(
      { name: JOIN_SERVICE_USER, groups: ['system:serviceaccounts', 'system:authenticated'] },
      'POST',
      {
        type: { group: 'coordination.k8s.io', resource: 'leases' },
        namespace: 'kube-system',
        name: undefined,
      },
      { metadata: { name: 'constellation-control-plane-join' } },
      new URLSearchParams(),
    );
    expect(rbacAllows(attributes, namedCreate)).toBe(false);
  });
});
