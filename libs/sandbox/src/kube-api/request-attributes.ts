/** The authenticated identity of a request: a user name and its groups. */
export interface UserInfo {
  name: string;
  groups: readonly string[];
}

/** What the authorizers decide on, as k8s.io/apiserver's authorizer.Attributes. */
export type RequestAttributes =
  | {
      resourceRequest: true;
      user: UserInfo;
      verb: string;
      apiGroup: string;
      resource: string;
      /** "status" for /status; empty otherwise. */
      subresource: string;
      /** Empty for cluster-scoped resources and for lists across all namespaces. */
      namespace: string;
      /** Empty for lists; for creates, the name in the body (what NodeRestriction admission checks). */
      name: string;
    }
  | { resourceRequest: false; user: UserInfo; verb: string; path: string };

/** The API verb of an HTTP request (apiserver endpoints/request/requestinfo.go). */
export function apiVerb(method: string, named: boolean, watch: boolean): string {
  switch (method) {
    case 'GET':
      if (named) return 'get';
      return watch ? 'watch' : 'list';
    case 'POST':
      return 'create';
    case 'PUT':
      return 'update';
    case 'PATCH':
      return 'patch';
    case 'DELETE':
      return named ? 'delete' : 'deletecollection';
    default:
      return method.toLowerCase();
  }
}

/**
 * The message of a 403, exactly as k8s.io/apiserver responsewriters.forbiddenMessage and
 * apierrors.NewForbidden build it, e.g. `secrets is forbidden: User "x" cannot list resource
 * "secrets" in API group "" in the namespace "kube-system"`.
 */
export function forbiddenMessage(attributes: RequestAttributes, reason: string): string {
  const user = attributes.user.name;
  let detail: string;
  let prefix: string;
  if (!attributes.resourceRequest) {
    detail = `User ${quote(user)} cannot ${attributes.verb} path ${quote(attributes.path)}`;
    prefix = 'forbidden';
  } else {
    const { verb, apiGroup, namespace, name } = attributes;
    const resource = combinedResource(attributes);
    detail =
      namespace === ''
        ? `User ${quote(user)} cannot ${verb} resource ${quote(resource)} in API group ${quote(apiGroup)} at the cluster scope`
        : `User ${quote(user)} cannot ${verb} resource ${quote(resource)} in API group ${quote(apiGroup)} in the namespace ${quote(namespace)}`;
    const qualified = apiGroup === '' ? attributes.resource : `${attributes.resource}.${apiGroup}`;
    prefix =
      name === '' || verb === 'create' ? `${qualified} is forbidden` : `${qualified} ${quote(name)} is forbidden`;
  }
  return reason === '' ? `${prefix}: ${detail}` : `${prefix}: ${detail}: ${reason}`;
}

/** Go's %q for the plain strings that appear here. */
function quote(text: string): string {
  return JSON.stringify(text);
}

/** "resource" or "resource/subresource", what RBAC rules and 403 messages name. */
export function combinedResource(attributes: { resource: string; subresource: string }): string {
  return attributes.subresource === '' ? attributes.resource : `${attributes.resource}/${attributes.subresource}`;
}

/** The parts of a routed request the authorizers need. */
export interface RoutedRequest {
  type: { group: string; resource: string };
  namespace: string | undefined;
  name: string | undefined;
  subresource?: string | undefined;
}

/** Attributes of a resource request; a create is named by its body (as admission sees it). */
export function resourceAttributes(
  user: UserInfo,
  method: string,
  route: RoutedRequest,
  body: unknown,
  query: URLSearchParams,
): RequestAttributes {
  const bodyName = (body as { metadata?: { name?: unknown } } | undefined)?.metadata?.name;
  const name = route.name ?? (method === 'POST' && typeof bodyName === 'string' ? bodyName : '');
  return {
    resourceRequest: true,
    user,
    verb: apiVerb(method, route.name !== undefined, query.get('watch') === 'true' || query.get('watch') === '1'),
    apiGroup: route.type.group,
    resource: route.type.resource,
    subresource: route.subresource ?? '',
    namespace: route.namespace ?? '',
    name,
  };
}

/** Attributes of a request for a path that is no resource (/version, discovery). */
export function nonResourceAttributes(user: UserInfo, method: string, path: string): RequestAttributes {
  return { resourceRequest: false, user, verb: method.toLowerCase(), path };
}
