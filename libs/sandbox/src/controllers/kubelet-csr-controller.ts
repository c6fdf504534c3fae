import { createPublicKey } from 'node:crypto';
import type { CertificateAuthority } from '@constellation/keys';
import type { KubeObject, KubeObjectStore, ResourceType } from '../kube-object-store.js';
import { certificateRequestDer } from '../certificate-request-pem.js';
import { x509 } from '../x509.js';

/*
 * kube-controller-manager's csrapproving and csrsigning controllers for kubelet client
 * certificates (pkg/controller/certificates/approver/sarapprove.go, signer/signer.go):
 * a CertificateSigningRequest for signer kubernetes.io/kube-apiserver-client-kubelet that is a
 * kubelet client request (pkg/apis/certificates/helpers.go ValidateKubeletClientCSR) is approved
 * when its requester may create certificatesigningrequests/selfnodeclient (for its own name) or
 * /nodeclient (a bootstrap token of kubeadm's node group), tried in that order; approved requests
 * are signed by the cluster CA with the requested client usage, for the signing duration or the
 * shorter expirationSeconds. Anything else stays pending, as there.
 */

export const KUBELET_CLIENT_SIGNER = 'kubernetes.io/kube-apiserver-client-kubelet';
/** kubeletClientRequiredUsagesNoRSA and kubeletClientRequiredUsages: the only usage sets allowed. */
const USAGE_SETS = [
  ['client auth', 'digital signature'],
  ['client auth', 'digital signature', 'key encipherment'],
].map((set) => set.join(','));
/** signer.go: --cluster-signing-duration's default (8760h); requests may only shorten it, to 10 min at least. */
const SIGNING_DAYS = 365;
const MIN_REQUESTED_SECONDS = 600;
/** sarapprove.go recognizers(): self first, then any node name. */
const RECOGNIZERS = [
  {
    self: true,
    subresource: 'selfnodeclient',
    message: 'Auto approving self kubelet client certificate after SubjectAccessReview.',
  },
  {
    self: false,
    subresource: 'nodeclient',
    message: 'Auto approving kubelet client certificate after SubjectAccessReview.',
  },
] as const;

/** A SubjectAccessReview: may this user create this subresource of certificatesigningrequests? */
export type CsrAccessReview = (user: { name: string; groups: readonly string[] }, subresource: string) => boolean;

interface CsrSpec {
  request?: string;
  signerName?: string;
  usages?: string[];
  username?: string;
  groups?: string[];
  expirationSeconds?: number;
}

interface CsrCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastUpdateTime?: string;
}

export class KubeletCsrController {
  private scheduled = false;

  constructor(
    private readonly store: KubeObjectStore,
    private readonly csrs: ResourceType,
    private readonly ca: CertificateAuthority,
    private readonly mayCreate: CsrAccessReview,
  ) {
    store.onChange((change) => {
      if (!change.deleted && change.type.resource === 'certificatesigningrequests') this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.reconcile();
    });
  }

  private async reconcile(): Promise<void> {
    for (const csr of this.store.list(this.csrs, undefined).items) {
      const status = (csr['status'] as { conditions?: CsrCondition[]; certificate?: string } | undefined) ?? {};
      const conditions = status.conditions ?? [];
      if (conditions.some((c) => c.type === 'Denied' || c.type === 'Failed') || status.certificate !== undefined)
        continue;
      const spec = (csr['spec'] as CsrSpec | undefined) ?? {};
      const request = await kubeletClientRequest(spec);
      if (request === undefined) continue;
      if (!conditions.some((c) => c.type === 'Approved' && c.status === 'True')) {
        const user = { name: spec.username ?? '', groups: spec.groups ?? [] };
        const self = user.name === request.commonName;
        const approver = RECOGNIZERS.find((r) => (self || !r.self) && this.mayCreate(user, r.subresource));
        if (approver === undefined) continue;
        this.update(csr, {
          conditions: [
            ...conditions,
            {
              type: 'Approved',
              status: 'True',
              reason: 'AutoApproved',
              message: approver.message,
              lastUpdateTime: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
            },
          ],
        });
        continue; // the change brings this CSR back for signing, as the real signer's watch does
      }
      const requested = spec.expirationSeconds;
      const certificate = await this.ca.issueCertificate({
        commonName: request.commonName,
        organisations: ['system:nodes'],
        publicKey: request.publicKey,
        usage: 'client',
        validDays:
          requested === undefined
            ? SIGNING_DAYS
            : Math.min(SIGNING_DAYS, Math.max(MIN_REQUESTED_SECONDS, requested) / 86_400),
      });
      this.update(this.store.get(this.csrs, undefined, csr.metadata.name), {
        conditions,
        certificate: Buffer.from(certificate).toString('base64'),
      });
    }
  }

  private update(csr: KubeObject, status: Record<string, unknown>): void {
    try {
      const current = (csr['status'] as Record<string, unknown> | undefined) ?? {};
      this.store.replace(this.csrs, undefined, csr.metadata.name, { ...csr, status: { ...current, ...status } });
    } catch {
      this.schedule(); // changed meanwhile: look again
    }
  }
}

/** ValidateKubeletClientCSR: the request's CN and key when it is a kubelet client request. */
async function kubeletClientRequest(
  spec: CsrSpec,
): Promise<{ commonName: string; publicKey: ReturnType<typeof createPublicKey> } | undefined> {
  if (spec.signerName !== KUBELET_CLIENT_SIGNER || spec.request === undefined) return undefined;
  // Compared as sets, as usagesToSet does: order and repeats do not matter.
  const usages = [...new Set(spec.usages ?? [])].sort().join(',');
  if (!USAGE_SETS.includes(usages)) return undefined;
  const der = certificateRequestDer(Buffer.from(spec.request, 'base64').toString('latin1'));
  if (der === undefined) return undefined;
  let csr: x509.Pkcs10CertificateRequest;
  try {
    csr = new x509.Pkcs10CertificateRequest(der);
  } catch {
    return undefined;
  }
  const organisations = csr.subjectName.getField('O');
  const commonNames = csr.subjectName.getField('CN');
  const commonName = commonNames[0] ?? '';
  if (organisations.length !== 1 || organisations[0] !== 'system:nodes') return undefined;
  if (commonNames.length !== 1 || !commonName.startsWith('system:node:')) return undefined;
  // No DNS names, e-mail addresses, IP addresses or URIs in a client certificate request.
  if (csr.extensions.some((ext) => ext.type === '2.5.29.17')) return undefined;
  // The real server checks the request's self-signature when the CSR is created (ParseCSR).
  if (!(await csr.verify().catch(() => false))) return undefined;
  const publicKey = createPublicKey({ key: Buffer.from(csr.publicKey.rawData), format: 'der', type: 'spki' });
  return { commonName, publicKey };
}
