import { directoryStringText, readNameAttributes } from '@constellation/der';
import type { Tlv } from '@constellation/der';

/** Short names of the attribute types people read in certificate names (RFC 4514 §3 and common use). */
const SHORT_NAMES: Readonly<Record<string, string>> = {
  '2.5.4.3': 'CN',
  '2.5.4.7': 'L',
  '2.5.4.8': 'ST',
  '2.5.4.10': 'O',
  '2.5.4.11': 'OU',
  '2.5.4.6': 'C',
  '0.9.2342.19200300.100.1.25': 'DC',
  '1.2.840.113549.1.9.1': 'E',
  '2.5.4.42': 'G',
  '2.5.4.43': 'I',
  '2.5.4.4': 'SN',
  '2.5.4.12': 'T',
};

/** RFC 4514 §2.4 escaping: special characters, a leading space or '#', a trailing space; control characters as \XX. */
function escapeValue(value: string): string {
  return value
    .replace(/[,+"\\<>;]/g, (c) => `\\${c}`)
    .replace(/^[ #]/, (c) => `\\${c}`)
    .replace(/ $/, '\\ ')
    .replace(/[\r\n\t]/g, (c) => `\\${Buffer.from(c).toString('hex').toUpperCase()}`);
}

/**
 * A distinguished name (its DER) as text, in certificate order: "CN=..., O=...", multi-valued RDNs
 * joined by '+', types without a short name by OID, values that are not strings as '#' and their
 * hex. Names are compared as this text when a path is built; it is the text @peculiar/x509 writes.
 */
export function nameText(name: Tlv): string {
  return readNameAttributes(name)
    .map((rdn) =>
      rdn
        .map(({ type, value }) => {
          const text = directoryStringText(value);
          return `${SHORT_NAMES[type] ?? type}=${text === undefined ? `#${value.raw.toString('hex')}` : escapeValue(text)}`;
        })
        .join('+'),
    )
    .join(', ');
}
