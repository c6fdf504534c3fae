import { certificateRequestDer } from '../certificate-request-pem.js';
import { certificateRequestError } from './csr-signature.js';

/** A field error as kube-apiserver words it: the field's path and what is wrong there. */
export interface CsrFieldError {
  field: string;
  detail: string;
}

/** certificates.KeyUsage values (pkg/apis/certificates/types.go), sorted as a Go string set lists them. */
const VALID_USAGES = [
  'any',
  'cert sign',
  'client auth',
  'code signing',
  'content commitment',
  'crl sign',
  'data encipherment',
  'decipher only',
  'digital signature',
  'email protection',
  'encipher only',
  'ipsec end system',
  'ipsec tunnel',
  'ipsec user',
  'key agreement',
  'key encipherment',
  'microsoft sgc',
  'netscape sgc',
  'ocsp signing',
  's/mime',
  'server auth',
  'signing',
  'timestamping',
];

/** Go's %#v of a []byte, as field.Invalid prints the request. */
function goBytes(bytes: Buffer): string {
  return `[]byte{${[...bytes].map((b) => `0x${b.toString(16)}`).join(', ')}}`;
}

/**
 * What validateCertificateSigningRequest (pkg/apis/certificates/validation/validation.go) refuses
 * in a new request's spec: a request that validateCSR refuses (not a PEM CERTIFICATE REQUEST as
 * ParseCSR in pkg/apis/certificates/helpers.go reads it, a DER x509 cannot parse, a signature that
 * does not verify), no usages or an unknown one, no signer name, and an expirationSeconds under 600.
 */
export function csrSpecErrors(spec: Record<string, unknown>): CsrFieldError[] {
  const errors: CsrFieldError[] = [];
  const encoded = spec['request'];
  const request = typeof encoded === 'string' ? Buffer.from(encoded, 'base64') : Buffer.alloc(0);
  const der = certificateRequestDer(request.toString('latin1'));
  const invalid = der === undefined ? 'PEM block type must be CERTIFICATE REQUEST' : certificateRequestError(der);
  if (invalid !== undefined)
    errors.push({ field: 'spec.request', detail: `Invalid value: ${goBytes(request)}: ${invalid}` });
  const usages = Array.isArray(spec['usages']) ? (spec['usages'] as unknown[]) : [];
  if (usages.length === 0) errors.push({ field: 'spec.usages', detail: 'Required value' });
  usages.forEach((usage, i) => {
    if (typeof usage !== 'string' || !VALID_USAGES.includes(usage)) {
      errors.push({
        field: `spec.usages[${i}]`,
        detail: `Unsupported value: ${JSON.stringify(usage)}: supported values: ${VALID_USAGES.map((u) => JSON.stringify(u)).join(', ')}`,
      });
    }
  });
  const signer = spec['signerName'];
  if (typeof signer !== 'string' || signer === '') errors.push({ field: 'spec.signerName', detail: 'Required value' });
  const expiration = spec['expirationSeconds'];
  if (typeof expiration === 'number' && expiration < 600) {
    errors.push({
      field: 'spec.expirationSeconds',
      detail: `Invalid value: ${expiration}: may not specify a duration less than 600 seconds (10 minutes)`,
    });
  }
  return errors;
}
