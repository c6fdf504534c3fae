import { freePort, sharedKubernetes } from '@constellation/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiErrorMessage } from './api-error-message.js';
import { coreWithToken, failure, recordsNamespace, sharedApiRelay } from './claim-records.fixture.js';
import type { RecordsNamespace } from './claim-records.fixture.js';

// The answers of the run's real API server, in a namespace of this file's own.

let ns: RecordsNamespace;

beforeAll(async () => {
  ns = await recordsNamespace('api-error-message');
});

afterAll(async () => {
  await ns.delete();
});

describe('apiErrorMessage', () => {
  it('names the status and the Status message of a JSON answer, in one line', async () => {
    const err = await failure(ns.admin.readNamespacedSecret({ namespace: ns.name, name: 'absent' }));
    expect(apiErrorMessage(err)).toBe('HTTP 404: secrets "absent" not found');
  });

  it("names RBAC's refusal as kube-apiserver words it", async () => {
    // The namespace's service account may get ConfigMaps, not Secrets.
    const core = coreWithToken(sharedKubernetes().apiServerUrl, ns.token);
    const err = await failure(core.readNamespacedSecret({ namespace: ns.name, name: 'absent' }));
    expect(apiErrorMessage(err)).toBe(
      `HTTP 403: secrets "absent" is forbidden: User "system:serviceaccount:${ns.name}:records" cannot get resource "secrets" in API group "" in the namespace "${ns.name}"`,
    );
  });

  it('names the plain-text answer of an API server over its in-flight limit', async () => {
    // kube-apiserver's answer beyond its in-flight limit, played by a relay in front of it.
    const relay = await sharedApiRelay();
    try {
      relay.throttle(() => true);
      const err = await failure(
        coreWithToken(relay.url, ns.token).readNamespacedSecret({ namespace: ns.name, name: 'absent' }),
      );
      expect(apiErrorMessage(err)).toBe('HTTP 429: Too many requests, please try again later.');
    } finally {
      await relay.close();
    }
  });

  it('keeps the message of anything but an API answer', async () => {
    // A port nothing listens on: the connection is refused before any answer.
    const url = `https://127.0.0.1:${String(await freePort())}`;
    const err = await failure(coreWithToken(url, ns.token).listNamespace());
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/ECONNREFUSED/);
    expect(apiErrorMessage(err)).toBe((err as Error).message);
    expect(apiErrorMessage('a string')).toBe('a string');
  });
});
