import { InvalidArgumentError, Option } from '@commander-js/extra-typings';

/** Parses a TCP port flag value; 0 only when `allowZero` (bind to any free port). */
export function parsePort(value: string, allowZero = false): number {
  const port = Number(value);
  const min = allowZero ? 0 : 1;
  if (!/^\d+$/.test(value) || !Number.isInteger(port) || port < min || port > 65535) {
    throw new InvalidArgumentError(`expected a port number from ${min} to 65535, got "${value}"`);
  }
  return port;
}

/** Parses a whole number flag value in [min, max]. */
export function parseInteger(value: string, min: number, max: number): number {
  const n = Number(value);
  if (!/^-?\d+$/.test(value) || !Number.isSafeInteger(n) || n < min || n > max) {
    throw new InvalidArgumentError(`expected a whole number from ${min} to ${max}, got "${value}"`);
  }
  return n;
}

/** `--log-level`, the same in every program. */
export function logLevelOption(): Option<
  '--log-level <level>',
  undefined,
  'info',
  'debug' | 'info' | 'warn' | 'error'
> {
  return new Option('--log-level <level>', 'least severe level that is logged')
    .choices(['debug', 'info', 'warn', 'error'] as const)
    .default('info' as const);
}
