import { request } from 'node:https';

export interface HttpsJsonResponse {
  status: number;
  body: unknown;
}

/**
 * One JSON request over HTTPS. `ca` undefined means "do not verify" (kubeadm discovery before
 * the CA is pinned); otherwise the server must chain to `ca`.
 */
export function httpsJson(
  url: string,
  options: { method?: string; body?: unknown; ca?: string; timeoutMs?: number } = {},
): Promise<HttpsJsonResponse> {
  return new Promise((resolve, reject) => {
    const payload = options.body === undefined ? undefined : Buffer.from(JSON.stringify(options.body));
    const req = request(
      url,
      {
        method: options.method ?? 'GET',
        ...(options.ca === undefined
          ? { rejectUnauthorized: false }
          : { ca: options.ca, checkServerIdentity: () => undefined }),
        headers: payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': payload.length },
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
