import { KubeApiServer } from '@constellation/sandbox';
import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiErrorMessage } from './api-error-message.js';
import { ADMIN_TOKEN, USER_TOKEN, coreApiWithToken, startTokenApiServer } from '@constellation/sandbox/testing';

let api: KubeApiServer;

beforeAll(async () => {
  api = await startTokenApiServer();
});

afterAll(async () => {
  await api.close();
});

const core = (token: string): k8s.CoreV1Api => coreApiWithToken(api, token);

const failure = (call: Promise<unknown>): Promise<unknown> =>
  call.then(
    () => {
      throw new Error('the call succeeded');
    },
    (err: unknown) => err,
  );

describe('apiErrorMessage', () => {
  it('names the status and the Status message of a JSON answer, in one line', async () => {
    const err = await failure(core(ADMIN_TOKEN).readNamespacedSecret({ namespace: 'kube-system', name: 'absent' }));
    expect(apiErrorMessage(err)).toBe('HTTP 404: secrets "absent" not found');
  });

  it('names the plain-text answer of an API server over its in-flight limit', async () => {
    api.throttle(() => true);
    try {
      const err = await failure(core(USER_TOKEN).readNamespacedSecret({ namespace: 'kube-system', name: 'absent' }));
      expect(apiErrorMessage(err)).toBe('HTTP 429: Too many requests, please try again later.');
    } finally {
      api.throttle(undefined);
    }
  });

  it('keeps the message of anything but an API answer', async () => {
    const closed = await KubeApiServer.start();
    const url = closed.url;
    await closed.close();
    const kc = new k8s.KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'gone', server: url, skipTLSVerify: true }],
      users: [{ name: 'u' }],
      contexts: [{ name: 'gone', cluster: 'gone', user: 'u' }],
      currentContext: 'gone',
    });
    const err = await failure(kc.makeApiClient(k8s.CoreV1Api).listNamespace());
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/ECONNREFUSED/);
    expect(apiErrorMessage(err)).toBe((err as Error).message);
    expect(apiErrorMessage('a string')).toBe('a string');
  });
});
