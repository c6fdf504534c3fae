/**
 * The PEM block of a DER structure as Go's pem.EncodeToMemory and @peculiar/x509 write it:
 * 64-column base64 lines, no empty line before the END line, no final newline.
 */
export function pemBlock(label: string, der: Uint8Array): string {
  const lines =
    Buffer.from(der)
      .toString('base64')
      .match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----`;
}
