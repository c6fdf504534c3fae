import { InvalidArgumentError } from '@commander-js/extra-typings';
import { DeviceTransport, SocketTransport } from '@constellation/tpm';
import type { TpmTransport } from '@constellation/tpm';

/** `--tpm`: a character device path (/dev/tpmrm0), or `swtpm:<host>:<port>` for swtpm's socket. */
export type TpmAddress = { kind: 'device'; path: string } | { kind: 'swtpm'; host: string; port: number };

export function parseTpmAddress(value: string): TpmAddress {
  const swtpm = /^swtpm:([^:]+):(\d{1,5})$/.exec(value);
  if (swtpm !== null) return { kind: 'swtpm', host: swtpm[1] ?? '', port: Number(swtpm[2]) };
  if (value.startsWith('/')) return { kind: 'device', path: value };
  throw new InvalidArgumentError(`expected a device path like /dev/tpmrm0 or swtpm:<host>:<port>, got "${value}"`);
}

export function tpmTransport(address: TpmAddress): TpmTransport {
  return address.kind === 'device'
    ? new DeviceTransport(address.path)
    : new SocketTransport({ host: address.host, port: address.port, keepConnection: true });
}
