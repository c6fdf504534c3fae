import type { Name } from '@peculiar/asn1-x509';

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
 * A distinguished name as text, in certificate order: "CN=..., O=...", multi-valued RDNs joined by
 * '+', types without a short name by OID, values that are not strings as '#' and their hex.
 * Names are compared as this text when a path is built, as they were with @peculiar/x509.
 */
export function nameText(name: Name): string {
  return name
    .map((rdn) =>
      rdn
        .map((attribute) => {
          const type = SHORT_NAMES[attribute.type] ?? attribute.type;
          const { anyValue } = attribute.value;
          const value =
            anyValue === undefined
              ? escapeValue(attribute.value.toString())
              : `#${Buffer.from(anyValue).toString('hex')}`;
          return `${type}=${value}`;
        })
        .join('+'),
    )
    .join(', ');
}
