import { describeResponseCode } from './response-code.js';

/** The TPM answered a command with a non-success response code. */
export class TpmError extends Error {
  override readonly name = 'TpmError';
  /** Raw TPM_RC value. */
  readonly code: number;
  /** Decoded name, for example "TPM_RC_AUTH_FAIL" or "TPM_RC_OBJECT_MEMORY". */
  readonly rcName: string;
  /** The command that failed, for example "Quote". */
  readonly command: string;

  constructor(command: string, code: number) {
    const described = describeResponseCode(code);
    super(`TPM2_${command} failed: ${described.text} (0x${code.toString(16).padStart(3, '0')})`);
    this.code = code;
    this.rcName = described.name;
    this.command = command;
  }
}

/** Bytes that should be a TPM structure are not: truncated, trailing data, bad size fields. */
export class TpmParseError extends Error {
  override readonly name = 'TpmParseError';
}

/** The transport to the TPM failed (connection, device, timeout). */
export class TpmTransportError extends Error {
  override readonly name = 'TpmTransportError';
}
