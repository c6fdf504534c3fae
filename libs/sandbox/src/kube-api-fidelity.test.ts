import * as k8s from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeApiServer } from './kube-api-server.js';
import { apiFailure } from './testing/api-failure.js';

/*
 * Fidelity audit: requests the API stand-in accepted that kube-apiserver refuses. Each test asserts
 * the real server's answer and cites the Kubernetes source that produces it.
 */

let api: KubeApiServer;
let core: k8s.CoreV1Api;
let coordination: k8s.CoordinationV1Api;

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
});

afterAll(async () => {
  await api.close();
});

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
  const certificates = (): k8s.CertificatesV1Api => {
    const kc = new k8s.KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'fake', server: api.url, skipTLSVerify: true }],
      users: [{ name: 'u', token: 'test' }],
      contexts: [{ name: 'c', cluster: 'fake', user: 'u' }],
      currentContext: 'c',
    });
    return kc.makeApiClient(k8s.CertificatesV1Api);
  };

  it('refuses a request that is no PEM CERTIFICATE REQUEST (422)', async () => {
    // pkg/apis/certificates/validation/validation.go validateCertificateSigningRequest -> validateCSR
    // -> certificates.ParseCSR (pkg/apis/certificates/helpers.go): "PEM block type must be
    // CERTIFICATE REQUEST", reported as field.Invalid(spec.request, ...) => 422 Invalid.
    const failure = await apiFailure(
      certificates().createCertificateSigningRequest({
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

  it('refuses an unknown usage (422 Unsupported value)', async () => {
    // validation.go validateCertificateSigningRequest: each usage must be in allValidUsages, else
    // field.NotSupported(spec.usages[i], ...). (The request is checked too; both errors are listed.)
    const failure = await apiFailure(
      certificates().createCertificateSigningRequest({
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
