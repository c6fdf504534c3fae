/**
 * The DER of a PEM CERTIFICATE REQUEST as Go's `certificates.ParseCSR` reads it with `pem.Decode`:
 * the first PEM block, which must be a CERTIFICATE REQUEST; line breaks, spaces and tabs inside its
 * base64 body do not matter (an empty line before END included); a body that is not base64 is no
 * block. Shared by the API stand-in's CSR validation and the controller-manager's approver, which
 * both stand for that one function.
 */
export function certificateRequestDer(text: string): Buffer | undefined {
  const block = /-----BEGIN ([^-\r\n]+)-----\r?\n([\s\S]*?)-----END \1-----/.exec(text);
  if (block?.[1] !== 'CERTIFICATE REQUEST') return undefined;
  const body = (block[2] ?? '').replace(/[\s]/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(body) || body.length % 4 !== 0) return undefined;
  return Buffer.from(body, 'base64');
}
