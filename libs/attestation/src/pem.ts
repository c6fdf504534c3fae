/** One PEM block: its label and the DER between the boundaries. */
export interface PemBlock {
  label: string;
  der: Buffer;
}

const BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END ([A-Z0-9 ]+)-----/g;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * The blocks of a PEM text (RFC 7468), in order. Text between blocks is ignored, as OpenSSL does;
 * a block whose END label differs from its BEGIN label, or whose body is not base64, is an error.
 */
export function pemBlocks(text: string): PemBlock[] {
  const blocks: PemBlock[] = [];
  for (const match of text.matchAll(BLOCK)) {
    const [, label = '', body = '', end = ''] = match;
    if (end !== label) throw new Error(`PEM block "${label}" ends with "${end}"`);
    const base64 = body.replace(/\s+/g, '');
    if (!BASE64.test(base64) || base64.length % 4 !== 0) throw new Error(`PEM block "${label}" is not base64`);
    blocks.push({ label, der: Buffer.from(base64, 'base64') });
  }
  return blocks;
}
