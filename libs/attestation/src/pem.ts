import { AttestationError } from './errors.js';

/** One PEM block: its label and the DER between the boundaries. */
export interface PemBlock {
  label: string;
  der: Buffer;
}

const BEGIN = /-----BEGIN ([A-Z0-9 ]+)-----/g;
const END = /-----END ([A-Z0-9 ]+)-----/y;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * The blocks of a PEM text (RFC 7468), in order. Text between blocks is ignored, as OpenSSL does;
 * a block whose END label differs from its BEGIN label, whose body is not base64, or that has no
 * END line (a bundle cut short) is an error. One pass over the text: a lazy pattern spanning
 * BEGIN to END rescanned the rest of the text for every unterminated BEGIN (quadratic; 0.5 MB
 * took a second, red-team finding).
 */
export function pemBlocks(text: string): PemBlock[] {
  const blocks: PemBlock[] = [];
  BEGIN.lastIndex = 0;
  for (let begin = BEGIN.exec(text); begin !== null; begin = BEGIN.exec(text)) {
    const label = begin[1] ?? '';
    const bodyStart = begin.index + begin[0].length;
    const endAt = text.indexOf('-----END ', bodyStart);
    if (endAt < 0) throw new Error(`PEM block "${label}" has no END line`);
    END.lastIndex = endAt;
    const end = END.exec(text);
    if (end === null) throw new Error(`PEM block "${label}" has a malformed END line`);
    if (end[1] !== label) throw new Error(`PEM block "${label}" ends with "${end[1] ?? ''}"`);
    const base64 = text.slice(bodyStart, endAt).replace(/\s+/g, '');
    if (!BASE64.test(base64) || base64.length % 4 !== 0) throw new Error(`PEM block "${label}" is not base64`);
    blocks.push({ label, der: Buffer.from(base64, 'base64') });
    BEGIN.lastIndex = END.lastIndex;
  }
  return blocks;
}

/**
 * The DER of every CERTIFICATE block in a PEM bundle (other block types are refused). Lives apart
 * from the certificate checks so that reading pinned roots at start loads no ASN.1 library.
 */
export function pemCertificatesToDer(pem: string): Buffer[] {
  let blocks;
  try {
    blocks = pemBlocks(pem);
  } catch (err) {
    throw new AttestationError(
      'ek-certificate',
      `PEM bundle is malformed (${err instanceof Error ? err.message : String(err)})`,
    );
  }
  if (blocks.length === 0) throw new AttestationError('ek-certificate', 'PEM bundle holds no certificates');
  return blocks.map((block, i) => {
    if (block.label !== 'CERTIFICATE') {
      throw new AttestationError('ek-certificate', `PEM block ${i + 1} is "${block.label}", expected "CERTIFICATE"`);
    }
    return block.der;
  });
}
