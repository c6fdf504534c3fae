import { randomBytes } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import { mkdir, open, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { writeFileAtomic } from '@constellation/files';
import { kubeconfig } from '../kubeadm-standin/kubeconfig.js';
import { JOIN_SERVICE_ACCOUNT } from './authorization-rules.js';
import { sameSecret } from './bootstrap-token-authenticator.js';
import type { AuthenticationResult } from './client-certificate-authenticator.js';
import type { UserInfo } from './request-attributes.js';

/** One line of a kube-apiserver `--token-auth-file`: token,user,uid,"group1,group2". */
export interface StaticToken {
  token: string;
  user: string;
  uid: string;
  groups: readonly string[];
}

/**
 * Parses a `--token-auth-file` (k8s.io/apiserver/pkg/authentication/token/tokenfile): CSV, one
 * token a line, at least token, user and uid; the optional fourth column is a comma-separated
 * group list, quoted. Blank lines and lines starting with # are skipped.
 */
export function parseTokenAuthFile(text: string, source: string): StaticToken[] {
  const tokens: StaticToken[] = [];
  text.split('\n').forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const columns = csvColumns(line);
    const [token = '', user = '', uid = '', groups = ''] = columns;
    if (columns.length < 3 || token === '' || user === '')
      throw new Error(`${source}:${index + 1}: expected token,user,uid[,"groups"]`);
    tokens.push({ token, user, uid, groups: groups === '' ? [] : groups.split(',').map((g) => g.trim()) });
  });
  return tokens;
}

function csvColumns(line: string): string[] {
  const columns: string[] = [];
  let current = '';
  let quoted = false;
  for (const char of line) {
    if (char === '"') quoted = !quoted;
    else if (char === ',' && !quoted) {
      columns.push(current);
      current = '';
    } else current += char;
  }
  columns.push(current);
  return columns;
}

/** The static-token authenticator: a bearer token listed in the file (compared in constant time). */
export function authenticateStaticToken(token: string, tokens: readonly StaticToken[]): AuthenticationResult {
  const found = tokens.find((candidate) => sameSecret(candidate.token, token));
  if (found === undefined) return { outcome: 'absent' };
  return { outcome: 'authenticated', user: { name: found.user, groups: found.groups } };
}

/** Reads a token file; a missing file holds no tokens (mini may write it after the server started). */
export async function readTokenAuthFile(path: string): Promise<StaticToken[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  return parseTokenAuthFile(text, path);
}

/** The user a service-account token authenticates as (serviceaccount.UserInfo). */
export function serviceAccountUser(namespace: string, name: string): UserInfo {
  return {
    name: `system:serviceaccount:${namespace}:${name}`,
    groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`],
  };
}

export interface ServiceAccountCredentialSpec {
  /** The API server's `tokenAuthFile`; the token is appended (file mode 0600). */
  tokenAuthFile: string;
  /** Where to write the kubeconfig that uses the token (mode 0600). */
  kubeconfigPath: string;
  server: string;
  caPem: string;
  namespace?: string;
  name?: string;
}

/**
 * Mints a bearer token for a service account (by default kube-system/join-service, the
 * JoinService's identity in deploy/joinservice), records it in the token file the stand-in
 * authenticates from, and writes a kubeconfig using it. Real clusters give pods signed
 * service-account JWTs; the stand-in accepts a static token for the same user and groups,
 * which kube-apiserver's --token-auth-file also allows.
 */
export async function mintServiceAccountCredential(spec: ServiceAccountCredentialSpec): Promise<UserInfo> {
  const namespace = spec.namespace ?? JOIN_SERVICE_ACCOUNT.namespace;
  const name = spec.name ?? JOIN_SERVICE_ACCOUNT.name;
  const user = serviceAccountUser(namespace, name);
  const token = randomBytes(32).toString('base64url');
  const groups = user.groups.join(',');
  await mkdir(dirname(spec.tokenAuthFile), { recursive: true });
  // O_NOFOLLOW and an explicit fchmod: a planted symlink is refused and an existing file with a
  // looser mode does not keep it (the mode option applies only to files it creates).
  const tokens = await open(
    spec.tokenAuthFile,
    fsConstants.O_WRONLY | fsConstants.O_APPEND | fsConstants.O_CREAT | fsConstants.O_NOFOLLOW,
    0o600,
  );
  try {
    await tokens.chmod(0o600);
    await tokens.appendFile(`${token},${user.name},${namespace}/${name},"${groups}"\n`);
  } finally {
    await tokens.close();
  }
  await mkdir(dirname(spec.kubeconfigPath), { recursive: true });
  await writeFileAtomic(
    spec.kubeconfigPath,
    kubeconfig({ clusterName: 'kubernetes', server: spec.server, caPem: spec.caPem, userName: user.name, token }),
    { mode: 0o600 },
  );
  return user;
}
