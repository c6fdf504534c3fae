import type { Socket } from 'node:net';
import { TLSSocket } from 'node:tls';
import type { UserInfo } from './request-attributes.js';

export type AuthenticationResult =
  | { outcome: 'authenticated'; user: UserInfo }
  /** No credential of this kind was presented: the next authenticator may try. */
  | { outcome: 'absent' }
  /** A credential was presented and is not valid: the request is answered 401. */
  | { outcome: 'rejected'; why: string };

const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';

/**
 * kube-apiserver's x509 authenticator (k8s.io/apiserver/pkg/authentication/request/x509): the
 * TLS layer has verified the chain to the client CA (`--client-ca-file`) and the validity
 * period; the certificate must allow client authentication. CN is the user, each O a group
 * (CommonNameUserConversion).
 */
export function authenticateClientCertificate(socket: Socket): AuthenticationResult {
  if (!(socket instanceof TLSSocket)) return { outcome: 'absent' };
  const certificate = socket.getPeerX509Certificate();
  if (certificate === undefined) return { outcome: 'absent' };
  if (!socket.authorized) {
    const error = socket.authorizationError as Error | string | null;
    const why = error instanceof Error ? error.message : String(error);
    return { outcome: 'rejected', why: `client certificate does not verify against the client CA: ${why}` };
  }
  const usages = certificate.keyUsage as string[] | undefined;
  if (usages !== undefined && !usages.includes(CLIENT_AUTH))
    return { outcome: 'rejected', why: 'client certificate is not valid for client authentication' };
  const subject = subjectFields(certificate.subject);
  const [name] = subject.get('CN') ?? [];
  if (name === undefined || name === '') return { outcome: 'rejected', why: 'client certificate has no common name' };
  return { outcome: 'authenticated', user: { name, groups: subject.get('O') ?? [] } };
}

/** Node prints a subject as one "KEY=value" line per attribute, repeated keys on their own lines. */
function subjectFields(subject: string): Map<string, string[]> {
  const fields = new Map<string, string[]>();
  for (const line of subject.split('\n')) {
    const at = line.indexOf('=');
    if (at <= 0) continue;
    const key = line.slice(0, at);
    fields.set(key, [...(fields.get(key) ?? []), line.slice(at + 1)]);
  }
  return fields;
}
