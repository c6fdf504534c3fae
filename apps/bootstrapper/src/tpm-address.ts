import { InvalidArgumentError } from '@commander-js/extra-typings';
import { DeviceTransport, SocketTransport } from '@constellation/tpm';
import type { TpmTransport } from '@constellation/tpm';

/**
 * `--tpm`: a character device path (/dev/tpmrm0), `swtpm:<socket path>` for swtpm's unix socket,
 * or `swtpm:<host>:<port>` for its TCP socket.
 */
export type TpmAddress =
  | { kind: 'device'; path: string }
  | { kind: 'swtpm'; host: string; port: number }
  | { kind: 'swtpm-unix'; path: string };

export function parseTpmAddress(value: string): TpmAddress {
  const swtpm = /^swtpm:([^:/]+):(\d{1,5})$/.exec(value);
  if (swtpm !== null) return { kind: 'swtpm', host: swtpm[1] ?? '', port: Number(swtpm[2]) };
  const unix = /^swtpm:(\/.+)$/.exec(value);
  if (unix !== null) return { kind: 'swtpm-unix', path: unix[1] ?? '' };
  if (value.startsWith('/')) return { kind: 'device', path: value };
  throw new InvalidArgumentError(
    `expected a device path like /dev/tpmrm0, swtpm:<socket path> or swtpm:<host>:<port>, got "${value}"`,
  );
}

export function tpmTransport(address: TpmAddress): TpmTransport {
  switch (address.kind) {
    case 'device':
      return new DeviceTransport(address.path);
    case 'swtpm':
      return new SocketTransport({ host: address.host, port: address.port, keepConnection: true });
    case 'swtpm-unix':
      return new SocketTransport({ path: address.path, keepConnection: true });
  }
}
