import { AUTHORIZATION_BINDINGS } from './authorization-rules.js';
import type { AuthorizationBinding, NonResourceRule, ResourceRule, Subject } from './authorization-rules.js';
import { combinedResource } from './request-attributes.js';
import type { RequestAttributes, UserInfo } from './request-attributes.js';

/**
 * Whether a binding grants the request, with the matching rules of
 * plugin/pkg/auth/authorizer/rbac/rbac.go (RuleAllows, VerbMatches, APIGroupMatches,
 * ResourceMatches, ResourceNameMatches, NonResourceURLMatches).
 */
export function rbacAllows(
  attributes: RequestAttributes,
  bindings: readonly AuthorizationBinding[] = AUTHORIZATION_BINDINGS,
  /** Whether a ClusterRoleBinding kept in the API still exists (all exist when not told). */
  bindingExists: (name: string) => boolean = () => true,
): boolean {
  return bindings.some((binding) => {
    if (binding.clusterRoleBinding !== undefined && !bindingExists(binding.clusterRoleBinding.name)) return false;
    if (!binding.subjects.some((subject) => applies(subject, attributes.user))) return false;
    if (!attributes.resourceRequest)
      return (binding.nonResourceRules ?? []).some((rule) => pathAllowed(rule, attributes));
    if (binding.namespace !== undefined && binding.namespace !== attributes.namespace) return false;
    return binding.rules.some((rule) => resourceAllowed(rule, attributes));
  });
}

function applies(subject: Subject, user: UserInfo): boolean {
  return subject.kind === 'User' ? subject.name === user.name : user.groups.includes(subject.name);
}

const matches = (allowed: readonly string[], value: string): boolean =>
  allowed.includes('*') || allowed.includes(value);

function resourceAllowed(
  rule: ResourceRule,
  attributes: Extract<RequestAttributes, { resourceRequest: true }>,
): boolean {
  if (!matches(rule.verbs, attributes.verb)) return false;
  if (!matches(rule.apiGroups, attributes.apiGroup)) return false;
  if (!matches(rule.resources, combinedResource(attributes))) return false;
  // A rule with resourceNames never matches a request without a name (list, create): RBAC sees the
  // name in the URL only (requestinfo.go), which a create has not, whatever its body names.
  const name = attributes.verb === 'create' ? '' : attributes.name;
  return rule.resourceNames === undefined || rule.resourceNames.length === 0 || rule.resourceNames.includes(name);
}

function pathAllowed(
  rule: NonResourceRule,
  attributes: Extract<RequestAttributes, { resourceRequest: false }>,
): boolean {
  if (!matches(rule.verbs, attributes.verb)) return false;
  return rule.nonResourceURLs.some((url) =>
    url.endsWith('*') ? attributes.path.startsWith(url.slice(0, -1)) : url === attributes.path,
  );
}
