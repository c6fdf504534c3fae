import { TPM_RS_PW, TPM_ST } from './constants.js';
import { TpmError, TpmParseError } from './errors.js';
import { TpmReader, TpmWriter } from './marshal.js';

export interface CommandSpec {
  /** Name for errors, e.g. "Quote". */
  name: string;
  code: number;
  handles?: readonly number[];
  /**
   * Number of handles that need authorisation. Each gets a password session with an empty
   * password: our keys and PCRs have no auth values, and the resource we protect is the quote.
   */
  authHandles?: number;
  /**
   * One session handle per authorised handle, in handle order; overrides `authHandles`.
   * TPM_RS_PW is an empty-password session; any other handle is a policy session whose policy
   * has already been satisfied (no HMAC, so the auth value field stays empty).
   */
  authSessions?: readonly number[];
  parameters?: Buffer;
  /** Handles in the response before the parameters (CreatePrimary returns one). */
  responseHandles?: number;
}

export interface CommandResponse {
  handles: number[];
  parameters: TpmReader;
}

/** Builds the command bytes for `spec`. */
export function marshalCommand(spec: CommandSpec): Buffer {
  const handles = spec.handles ?? [];
  const sessions = spec.authSessions ?? Array.from({ length: spec.authHandles ?? 0 }, () => TPM_RS_PW);
  const auth = sessions.length;
  const body = new TpmWriter();
  for (const handle of handles) body.u32(handle);
  if (auth > 0) {
    const area = new TpmWriter();
    for (const session of sessions) {
      // TPMS_AUTH_COMMAND: no nonce, continueSession (the caller flushes policy sessions
      // itself, so a failed command never leaks one), empty password or HMAC.
      area.u32(session).sized(Buffer.alloc(0)).u8(0x01).sized(Buffer.alloc(0));
    }
    const areaBytes = area.toBuffer();
    body.u32(areaBytes.length).bytes(areaBytes);
  }
  body.bytes(spec.parameters ?? Buffer.alloc(0));
  const bodyBytes = body.toBuffer();
  return new TpmWriter()
    .u16(auth > 0 ? TPM_ST.SESSIONS : TPM_ST.NO_SESSIONS)
    .u32(10 + bodyBytes.length)
    .u32(spec.code)
    .bytes(bodyBytes)
    .toBuffer();
}

/** Checks the response header, turns a non-zero response code into TpmError, and splits handles from parameters. */
export function parseResponse(spec: CommandSpec, response: Buffer): CommandResponse {
  const r = new TpmReader(response, `TPM2_${spec.name} response`);
  const tag = r.u16('tag');
  const size = r.u32('responseSize');
  const rc = r.u32('responseCode');
  if (size !== response.length) {
    throw new TpmParseError(`TPM2_${spec.name} response: header says ${size} bytes, got ${response.length}`);
  }
  if (rc !== 0) throw new TpmError(spec.name, rc);
  const handles: number[] = [];
  for (let i = 0; i < (spec.responseHandles ?? 0); i++) handles.push(r.u32(`handle[${i}]`));
  if (tag === TPM_ST.SESSIONS) {
    const parameterSize = r.u32('parameterSize');
    const parameters = new TpmReader(r.bytes(parameterSize, 'parameters'), `TPM2_${spec.name} parameters`);
    // The rest is the authorisation area of our password or unbound policy sessions: no HMAC to check.
    return { handles, parameters };
  }
  if (tag !== TPM_ST.NO_SESSIONS)
    throw new TpmParseError(`TPM2_${spec.name} response: unknown tag 0x${tag.toString(16)}`);
  return { handles, parameters: new TpmReader(r.bytes(r.remaining, 'parameters'), `TPM2_${spec.name} parameters`) };
}
