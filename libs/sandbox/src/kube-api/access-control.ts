import type { IncomingMessage } from 'node:http';
import { KubeApiError } from '../kube-api-status.js';
import {
  ANONYMOUS_USER,
  AUTHENTICATED_GROUP,
  AUTHORIZATION_BINDINGS,
  UNAUTHENTICATED_GROUP,
} from './authorization-rules.js';
import { authenticateBootstrapToken } from './bootstrap-token-authenticator.js';
import type { SecretLike } from './bootstrap-token-authenticator.js';
import { authenticateClientCertificate } from './client-certificate-authenticator.js';
import type { AuthenticationResult } from './client-certificate-authenticator.js';
import { authorizeNode } from './node-authorizer.js';
import { rbacAllows } from './rbac-authorizer.js';
import { forbiddenMessage } from './request-attributes.js';
import type { RequestAttributes, UserInfo } from './request-attributes.js';
import { authenticateStaticToken, readTokenAuthFile } from './static-token-file.js';
import type { StaticToken } from './static-token-file.js';

/** How the stand-in authenticates; the flags of kube-apiserver it stands for are named. */
export interface KubeApiAuthentication {
  /** `--client-ca-file`: client certificates must chain to this CA (PEM). Needs TLS. */
  clientCaPem?: string;
  /** `--token-auth-file`: CSV token,user,uid,"groups"; read on use, so tokens can be added later. */
  tokenAuthFile?: string;
  /** Static tokens given directly (as if from a token file). */
  staticTokens?: readonly StaticToken[];
  /** `--enable-bootstrap-token-auth`; default true. */
  bootstrapTokens?: boolean;
}

const ANONYMOUS: UserInfo = { name: ANONYMOUS_USER, groups: [UNAUTHENTICATED_GROUP] };

const unauthorized = (): KubeApiError => new KubeApiError(401, 'Unauthorized', 'Unauthorized');

/**
 * Authentication and authorisation in front of the stand-in's handlers, in kube-apiserver's
 * order: client certificate, then bearer token (bootstrap, then static); no credential is
 * system:anonymous. Then the Node authorizer, then RBAC (`--authorization-mode=Node,RBAC`).
 * Anonymous requests are served only where RBAC grants system:anonymous or
 * system:unauthenticated (health, /version, kube-public/cluster-info) and answered 401
 * elsewhere: what kube-apiserver does with anonymous auth limited to those endpoints
 * (AuthenticationConfiguration anonymous.conditions).
 */
export class AccessControl {
  constructor(
    private readonly options: KubeApiAuthentication,
    private readonly readSecret: (namespace: string, name: string) => SecretLike | undefined,
    private readonly bindingExists: (name: string) => boolean = () => true,
  ) {}

  /** TLS server options that ask clients for a certificate chained to the client CA. */
  tlsOptions(): { requestCert: boolean; rejectUnauthorized: boolean; ca?: string } {
    if (this.options.clientCaPem === undefined) return { requestCert: false, rejectUnauthorized: false };
    // Clients without a certificate (tokens, anonymous) must still connect: the check is ours.
    return { requestCert: true, rejectUnauthorized: false, ca: this.options.clientCaPem };
  }

  /** The request's user; throws 401 for a credential that does not authenticate. */
  async authenticate(req: IncomingMessage): Promise<UserInfo> {
    const result = await this.authenticateCredential(req);
    if (result.outcome === 'rejected') throw unauthorized();
    if (result.outcome === 'absent') return ANONYMOUS;
    const groups = result.user.groups.includes(AUTHENTICATED_GROUP)
      ? result.user.groups
      : [...result.user.groups, AUTHENTICATED_GROUP];
    return { name: result.user.name, groups };
  }

  private async authenticateCredential(req: IncomingMessage): Promise<AuthenticationResult> {
    if (this.options.clientCaPem !== undefined) {
      const certificate = authenticateClientCertificate(req.socket);
      if (certificate.outcome !== 'absent') return certificate;
    }
    const header = req.headers.authorization;
    if (header === undefined) return { outcome: 'absent' };
    // Only bearer tokens authenticate (kube-apiserver has no basic auth since 1.19): any other
    // scheme is ignored, leaving the request anonymous.
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1];
    if (bearer === undefined) return { outcome: 'absent' };
    if (this.options.bootstrapTokens !== false) {
      const bootstrap = authenticateBootstrapToken(bearer, this.readSecret);
      if (bootstrap.outcome !== 'absent') return bootstrap;
    }
    const tokens = [
      ...(this.options.staticTokens ?? []),
      ...(this.options.tokenAuthFile === undefined ? [] : await readTokenAuthFile(this.options.tokenAuthFile)),
    ];
    const fromFile = authenticateStaticToken(bearer, tokens);
    // bearertoken.Authenticator: a presented token no authenticator accepts is a 401.
    return fromFile.outcome === 'absent' ? { outcome: 'rejected', why: 'unknown bearer token' } : fromFile;
  }

  /** Throws 403 (401 for anonymous) unless the Node authorizer or RBAC allows the request. */
  authorize(attributes: RequestAttributes): void {
    const node = authorizeNode(attributes);
    if (node.allowed || rbacAllows(attributes, AUTHORIZATION_BINDINGS, this.bindingExists)) return;
    if (attributes.user.name === ANONYMOUS_USER) throw unauthorized();
    const forbidden = new KubeApiError(403, 'Forbidden', forbiddenMessage(attributes, node.reason));
    if (attributes.resourceRequest) {
      forbidden.status.details = {
        ...(attributes.name === '' ? {} : { name: attributes.name }),
        kind: attributes.resource,
      };
    }
    throw forbidden;
  }
}

/** Reads kube-system Secrets for the bootstrap authenticator; undefined when there is none. */
export function secretReader(
  read: (namespace: string, name: string) => SecretLike,
): (namespace: string, name: string) => SecretLike | undefined {
  return (namespace, name) => {
    try {
      return read(namespace, name);
    } catch (err) {
      if (err instanceof KubeApiError && err.status.code === 404) return undefined;
      throw err;
    }
  };
}
