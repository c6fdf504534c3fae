import { Agent, get } from 'node:http';
import * as k8s from '@kubernetes/client-node';
import { pemBlock } from '@constellation/der';
import { createKubeletCsr } from '@constellation/keys';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeApiServer } from './kube-api-server.js';
import { apiFailure } from './testing/api-failure.js';

let api: KubeApiServer;
let core: k8s.CoreV1Api;
let coordination: k8s.CoordinationV1Api;
let versionApi: k8s.VersionApi;
let certificates: k8s.CertificatesV1Api;

beforeAll(async () => {
  api = await KubeApiServer.start({ gitVersion: 'v1.32.9' });
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'fake', server: api.url, skipTLSVerify: true }],
    users: [{ name: 'u', token: 'test' }],
    contexts: [{ name: 'c', cluster: 'fake', user: 'u' }],
    currentContext: 'c',
  });
  core = kc.makeApiClient(k8s.CoreV1Api);
  coordination = kc.makeApiClient(k8s.CoordinationV1Api);
  versionApi = kc.makeApiClient(k8s.VersionApi);
  certificates = kc.makeApiClient(k8s.CertificatesV1Api);
});

afterAll(async () => {
  await api.close();
});

describe('Kubernetes API stand-in through @kubernetes/client-node', () => {
  it('creates and reads a bootstrap-token Secret with server-set metadata', async () => {
    const created = await core.createNamespacedSecret({
      namespace: 'kube-system',
      body: {
        metadata: { name: 'bootstrap-token-abcdef' },
        type: 'bootstrap.kubernetes.io/token',
        data: { 'token-id': Buffer.from('abcdef').toString('base64') },
      },
    });
    expect(created.metadata?.resourceVersion).toMatch(/^\d+$/);
    expect(created.metadata?.uid).toBeDefined();
    const read = await core.readNamespacedSecret({ namespace: 'kube-system', name: 'bootstrap-token-abcdef' });
    expect(read.type).toBe('bootstrap.kubernetes.io/token');
    expect(Buffer.from(read.data?.['token-id'] ?? '', 'base64').toString()).toBe('abcdef');
  });

  it('answers 404 NotFound and 409 AlreadyExists with Status bodies', async () => {
    expect(await apiFailure(core.readNamespacedSecret({ namespace: 'kube-system', name: 'missing' }))).toEqual({
      code: 404,
      reason: 'NotFound',
      message: 'secrets "missing" not found',
    });
    await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'dup' } } });
    expect(
      (await apiFailure(core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'dup' } } })))
        .reason,
    ).toBe('AlreadyExists');
    expect(
      (await apiFailure(core.createNamespacedConfigMap({ namespace: 'nope', body: { metadata: { name: 'x' } } }))).code,
    ).toBe(404);
  });

  it('refuses stale updates with 409 Conflict and changes to immutable ConfigMaps with 422', async () => {
    const cm = await core.createNamespacedConfigMap({
      namespace: 'default',
      body: { metadata: { name: 'versioned' }, data: { a: '1' } },
    });
    const updated = await core.replaceNamespacedConfigMap({
      namespace: 'default',
      name: 'versioned',
      body: { metadata: cm.metadata ?? {}, data: { a: '2' } },
    });
    expect(Number(updated.metadata?.resourceVersion)).toBeGreaterThan(Number(cm.metadata?.resourceVersion));
    expect(
      (
        await apiFailure(
          core.replaceNamespacedConfigMap({
            namespace: 'default',
            name: 'versioned',
            body: { metadata: cm.metadata ?? {}, data: { a: '3' } },
          }),
        )
      ).reason,
    ).toBe('Conflict');
    const frozen = await core.createNamespacedConfigMap({
      namespace: 'kube-system',
      body: { metadata: { name: 'frozen' }, data: { a: '1' }, immutable: true },
    });
    expect(
      (
        await apiFailure(
          core.replaceNamespacedConfigMap({
            namespace: 'kube-system',
            name: 'frozen',
            body: { metadata: frozen.metadata ?? {}, data: { a: '2' }, immutable: true },
          }),
        )
      ).code,
    ).toBe(422);
  });

  it('serves leases with create-conflict semantics, lists by label, deletes', async () => {
    const body = {
      metadata: { name: 'control-plane-join', labels: { app: 'join' } },
      spec: { holderIdentity: 'cp-2', leaseDurationSeconds: 600 },
    };
    await coordination.createNamespacedLease({ namespace: 'kube-system', body });
    expect((await apiFailure(coordination.createNamespacedLease({ namespace: 'kube-system', body }))).reason).toBe(
      'AlreadyExists',
    );
    const list = await coordination.listNamespacedLease({ namespace: 'kube-system', labelSelector: 'app=join' });
    expect(list.items.map((l) => l.spec?.holderIdentity)).toEqual(['cp-2']);
    await coordination.deleteNamespacedLease({ namespace: 'kube-system', name: 'control-plane-join' });
    expect(
      (await apiFailure(coordination.readNamespacedLease({ namespace: 'kube-system', name: 'control-plane-join' })))
        .code,
    ).toBe(404);
  });

  it('stores nodes cluster-wide and patches them', async () => {
    await core.createNode({ body: { metadata: { name: 'worker-1', labels: { role: 'worker' } } } });
    const patched = await core.patchNode(
      { name: 'worker-1', body: { metadata: { annotations: { note: 'joined' } } } },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    expect(patched.metadata?.annotations).toEqual({ note: 'joined' });
    expect(patched.metadata?.labels).toEqual({ role: 'worker' });
    expect((await core.listNode()).items.map((n) => n.metadata?.name)).toContain('worker-1');
  });

  it('validates names and secret data like the real server', async () => {
    expect(
      (
        await apiFailure(
          core.createNamespacedSecret({ namespace: 'default', body: { metadata: { name: 'Bad_Name' } } }),
        )
      ).code,
    ).toBe(422);
    expect(
      (
        await apiFailure(
          core.createNamespacedSecret({
            namespace: 'default',
            body: { metadata: { name: 'bad-data' }, data: { k: '!!not base64!!' } },
          }),
        )
      ).code,
    ).toBe(400);
  });

  it('reports /version and readiness, and answers 503 while not ready', async () => {
    expect(await versionApi.getCode()).toMatchObject({ major: '1', minor: '32', gitVersion: 'v1.32.9' });
    api.setReady(false);
    expect((await fetch(`${api.url}/readyz`)).status).toBe(500);
    expect((await apiFailure(core.listNode())).code).toBe(503);
    api.setReady(true);
    expect(await (await fetch(`${api.url}/readyz`)).text()).toBe('ok');
  });

  it('keeps an idle connection 90 s, as kube-apiserver does', async () => {
    // secure_serving.go: IdleTimeout 90 s ("matches http.DefaultTransport keep-alive timeout").
    // Node announces its keep-alive timeout; its 5 s default dropped connections a client was
    // about to reuse.
    const agent = new Agent({ keepAlive: true });
    try {
      const header = await new Promise<string | string[] | undefined>((resolve, reject) => {
        get(`${api.url}/version`, { agent }, (res) => {
          res.resume();
          resolve(res.headers['keep-alive']);
        }).once('error', reject);
      });
      expect(header).toBe('timeout=90');
    } finally {
      agent.destroy();
    }
  });
});

/*
 * Requests the stand-in accepted and kube-apiserver refuses, found by a fidelity audit against the
 * Kubernetes sources: each test asserts the real server's answer and cites the source behind it.
 */
describe('Lease updates need a resourceVersion', () => {
  it('PUT of an existing Lease without metadata.resourceVersion is 422 Invalid, not an unconditional update', async () => {
    // pkg/registry/coordination/lease/strategy.go: leaseStrategy.AllowUnconditionalUpdate() returns false.
    // staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go (*Store).Update: when the
    // sent object has resourceVersion 0 and the strategy does not allow unconditional updates,
    // apierrors.NewInvalid(qualifiedKind{Group: "coordination.k8s.io", Kind: "leases"}, name,
    // field.Invalid(metadata.resourceVersion, newResourceVersion /* uint64 0, %#v => 0x0 */,
    // "must be specified for an update")).
    // The JoinService's ControlPlaneLease relies on this check ("Conflicting writes are resolved by
    // the API server's resourceVersion check"); a replace that lost its resourceVersion would be an
    // unconditional overwrite on the stand-in and a 422 on a real cluster.
    const name = 'constellation-control-plane-join';
    await coordination.createNamespacedLease({
      namespace: 'kube-system',
      body: { metadata: { name }, spec: { holderIdentity: 'node-a', leaseDurationSeconds: 60 } },
    });
    const failure = await apiFailure(
      coordination.replaceNamespacedLease({
        namespace: 'kube-system',
        name,
        body: { metadata: { name }, spec: { holderIdentity: 'node-b', leaseDurationSeconds: 60 } },
      }),
    );
    expect(failure).toEqual({
      code: 422,
      reason: 'Invalid',
      message: `leases.coordination.k8s.io "${name}" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update`,
    });
    const stored = await coordination.readNamespacedLease({ namespace: 'kube-system', name });
    expect(stored.spec?.holderIdentity).toBe('node-a');
  });
});

describe('ConfigMap size is counted in bytes', () => {
  it('refuses data whose values exceed 1 MiB of UTF-8 even when they are fewer than 1 Mi UTF-16 units', async () => {
    // pkg/apis/core/validation/validation.go ValidateConfigMap: totalSize += len(value) (Go: bytes
    // of the UTF-8 string) for data and binaryData; totalSize > core.MaxSecretSize (1 MiB) is
    // field.TooLong(field.NewPath(""), ..., core.MaxSecretSize) => 422 Invalid.
    // 400 000 × "€" is 1 200 000 bytes of UTF-8 but only 400 000 JavaScript string units.
    const failure = await apiFailure(
      core.createNamespacedConfigMap({
        namespace: 'kube-system',
        body: { metadata: { name: 'too-big-in-bytes' }, data: { big: '€'.repeat(400_000) } },
      }),
    );
    expect(failure.code).toBe(422);
    expect(failure.reason).toBe('Invalid');
    expect(failure.message).toContain('Too long: must have at most 1048576 bytes');
  });
});

describe('Secret type is immutable', () => {
  it('refuses an update that changes a Secret type (bootstrap token Secret to Opaque)', async () => {
    // pkg/apis/core/validation/validation.go ValidateSecretUpdate:
    // ValidateImmutableField(newSecret.Type, oldSecret.Type, field.NewPath("type")) =>
    // `type: Invalid value: "Opaque": field is immutable` (422 Invalid).
    const name = 'bootstrap-token-zzzzzz';
    const created = await core.createNamespacedSecret({
      namespace: 'kube-system',
      body: {
        metadata: { name },
        type: 'bootstrap.kubernetes.io/token',
        data: { 'token-id': Buffer.from('zzzzzz').toString('base64') },
      },
    });
    const failure = await apiFailure(
      core.replaceNamespacedSecret({
        namespace: 'kube-system',
        name,
        body: {
          metadata: { name, resourceVersion: created.metadata?.resourceVersion ?? '' },
          type: 'Opaque',
          data: {},
        },
      }),
    );
    expect(failure.code).toBe(422);
    expect(failure.message).toBe(`Secret "${name}" is invalid: type: Invalid value: "Opaque": field is immutable`);
  });
});

describe('CertificateSigningRequest creation is validated', () => {
  it('refuses a request that is no PEM CERTIFICATE REQUEST (422)', async () => {
    // pkg/apis/certificates/validation/validation.go validateCertificateSigningRequest -> validateCSR
    // -> certificates.ParseCSR (pkg/apis/certificates/helpers.go): "PEM block type must be
    // CERTIFICATE REQUEST", reported as field.Invalid(spec.request, ...) => 422 Invalid.
    const failure = await apiFailure(
      certificates.createCertificateSigningRequest({
        body: {
          metadata: { name: 'node-csr-garbage' },
          spec: {
            request: Buffer.from('not a certificate request').toString('base64'),
            signerName: 'kubernetes.io/kube-apiserver-client-kubelet',
            usages: ['digital signature', 'client auth'],
          },
        },
      }),
    );
    expect(failure.code).toBe(422);
    expect(failure.message).toContain('PEM block type must be CERTIFICATE REQUEST');
  });

  it('refuses a request whose DER does not parse or whose signature does not verify (422)', async () => {
    // validation.go validateCSR: ParseCSR, then "check that the signature is valid" with
    // csr.CheckSignature() (crypto/x509: "x509: ECDSA verification failure"); either error is
    // field.Invalid(spec.request, ...). The approver checking the signature later is not enough:
    // the real server never stores such a request.
    const { csrDer } = await createKubeletCsr('worker-1', []);
    const create = (name: string, der: Uint8Array): Promise<unknown> =>
      certificates.createCertificateSigningRequest({
        body: {
          metadata: { name },
          spec: {
            request: Buffer.from(pemBlock('CERTIFICATE REQUEST', der)).toString('base64'),
            signerName: 'kubernetes.io/kube-apiserver-client-kubelet',
            usages: ['digital signature', 'client auth'],
          },
        },
      });
    const forged = Buffer.from(csrDer);
    forged[forged.length - 1] = (forged.at(-1) ?? 0) ^ 0x01; // the signature's last byte
    const badSignature = await apiFailure(create('node-csr-forged', forged));
    expect(badSignature.code).toBe(422);
    expect(badSignature.message).toContain('spec.request: Invalid value: []byte{');
    expect(badSignature.message).toContain(': x509: ECDSA verification failure');
    const garbage = await apiFailure(create('node-csr-not-der', Buffer.from('not DER at all')));
    expect(garbage.code).toBe(422);
    expect(garbage.message).toContain(': x509: malformed certificate request');
    // pem.Decode drops spaces and tabs in the body, so a request wrapped so is the same request.
    const spaced = pemBlock('CERTIFICATE REQUEST', csrDer).replace(/\n(?!-)/g, '\n \t');
    await certificates.createCertificateSigningRequest({
      body: {
        metadata: { name: 'node-csr-spaced' },
        spec: {
          request: Buffer.from(spaced).toString('base64'),
          signerName: 'kubernetes.io/kube-apiserver-client-kubelet',
          usages: ['digital signature', 'client auth'],
        },
      },
    });
  });

  it('refuses an unknown usage (422 Unsupported value)', async () => {
    // validation.go validateCertificateSigningRequest: each usage must be in allValidUsages, else
    // field.NotSupported(spec.usages[i], ...). (The request is checked too; both errors are listed.)
    const failure = await apiFailure(
      certificates.createCertificateSigningRequest({
        body: {
          metadata: { name: 'node-csr-bogus-usage' },
          spec: {
            request: Buffer.from('not a certificate request').toString('base64'),
            signerName: 'kubernetes.io/kube-apiserver-client-kubelet',
            usages: ['bogus'],
          },
        },
      }),
    );
    expect(failure.code).toBe(422);
    expect(failure.message).toContain('spec.usages[0]: Unsupported value: "bogus"');
  });
});
