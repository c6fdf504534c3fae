import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeApiServer } from './kube-api-server.js';
import { ADMIN_TOKEN, USER_TOKEN, startTokenApiServer } from './testing/token-api-server.js';

let api: KubeApiServer;

beforeAll(async () => {
  api = await startTokenApiServer();
});

afterAll(async () => {
  await api.close();
});

// The stand-in's answer when over kube-apiserver's in-flight limit, as
// staging/src/k8s.io/apiserver/pkg/server/filters/maxinflight.go writes it (tooManyRequests:
// Retry-After "1", http.Error's plain text), after authentication and before authorization, and
// never to system:masters (the filter serves that group whatever the load).
describe('KubeApiServer.throttle (maxinflight.go)', () => {
  it('answers 429 with Retry-After 1 and a plain-text body, before authorization', async () => {
    api.throttle((request) => request.method === 'GET');
    try {
      const res = await fetch(`${api.url}/api/v1/namespaces/kube-system/secrets`, {
        headers: { authorization: `Bearer ${USER_TOKEN}` },
      });
      expect(res.status).toBe(429);
      expect(res.headers.get('retry-after')).toBe('1');
      expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
      expect(await res.text()).toBe('Too many requests, please try again later.\n');
    } finally {
      api.throttle(undefined);
    }
    // Unthrottled, the same user is refused by authorization: the 429 came first.
    const res = await fetch(`${api.url}/api/v1/namespaces/kube-system/secrets`, {
      headers: { authorization: `Bearer ${USER_TOKEN}` },
    });
    expect(res.status).toBe(403);
  });

  it('serves system:masters whatever it throttles', async () => {
    api.throttle(() => true);
    try {
      const res = await fetch(`${api.url}/api/v1/namespaces/kube-system/secrets`, {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      expect(res.status).toBe(200);
    } finally {
      api.throttle(undefined);
    }
  });
});
