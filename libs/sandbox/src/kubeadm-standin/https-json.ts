import { request } from 'node:https';

export interface HttpsJsonResponse {
  status: number;
  body: unknown;
}

/** Who the request is from: nobody, a bearer token, or a client certificate. */
export type Credential = { token: string } | { cert: string; key: string } | undefined;

export interface HttpsJsonOptions {
  method?: string;
  body?: unknown;
  /**
   * undefined: do not verify the server (kubeadm discovery before the CA is pinned). Set: the
   * server must chain to it and its certificate must name the URL's host, as Go's crypto/tls
   * checks for every client-go request (tls.Config.ServerName, x509.Certificate.VerifyHostname).
   */
  ca?: string;
  credential?: Credential;
  contentType?: string;
  timeoutMs?: number;
}

/** One JSON request over HTTPS; `ca` set means the server must chain to it and name the host. */
export function httpsJson(url: string, options: HttpsJsonOptions = {}): Promise<HttpsJsonResponse> {
  return new Promise((resolve, reject) => {
    const payload = options.body === undefined ? undefined : Buffer.from(JSON.stringify(options.body));
    const credential = options.credential;
    const headers: Record<string, string | number> = {};
    if (payload !== undefined) {
      headers['content-type'] = options.contentType ?? 'application/json';
      headers['content-length'] = payload.length;
    }
    if (credential !== undefined && 'token' in credential) headers['authorization'] = `Bearer ${credential.token}`;
    const req = request(
      url,
      {
        method: options.method ?? 'GET',
        ...(options.ca === undefined ? { rejectUnauthorized: false } : { ca: options.ca }),
        ...(credential !== undefined && 'cert' in credential ? { cert: credential.cert, key: credential.key } : {}),
        headers,
        timeout: options.timeoutMs ?? 10_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          let body: unknown = text;
          try {
            body = JSON.parse(text);
          } catch {
            // not JSON: keep the text
          }
          resolve({ status: res.statusCode ?? 0, body });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`request to ${url} timed out`)));
    req.on('error', reject);
    req.end(payload);
  });
}
