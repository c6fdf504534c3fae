import * as grpc from '@grpc/grpc-js';
import { MAX_MESSAGE_BYTES, grpcMessageLimits } from './message-limits.js';

/**
 * The one place product code gets gRPC servers and clients from, so that every one of them
 * enforces the message limits of docs/protocols.md (MAX_MESSAGE_BYTES in both directions):
 *
 * - a server refuses a larger request and will not send a larger response;
 * - a client will not send a larger request and refuses a larger response;
 *
 * each with RESOURCE_EXHAUSTED, grpc's own status for an oversized message.
 *
 * Defaults are the limits, channelz off (CHANNELZ_OFF) and, for servers, a connection idle limit (SERVER_CONNECTION_IDLE_MS)
 * and a connection age limit (SERVER_CONNECTION_AGE_MS, then SERVER_CONNECTION_AGE_GRACE_MS):
 * grpc-js keeps a connection without calls open for ever, and one whose call never ends (a
 * request announcing bytes it never sends, a health watch) too, so a stranger's connections would
 * pile up until the process runs out of descriptors. Other settings stay grpc-js's defaults unless
 * the caller passes them: no `grpc.max_concurrent_streams` (the JoinService sets its own), the
 * server's keepalive ping every two hours. Callers may tighten the limits and the bounds (a smaller
 * value) but never loosen them: a larger value, or -1 (unlimited), is a RangeError.
 *
 * A guard test (grpc-factory.test.ts) fails when product code constructs `new grpc.Server(` or a
 * generated client directly.
 */

const LIMIT_KEYS = ['grpc.max_receive_message_length', 'grpc.max_send_message_length'] as const;

/** A RangeError unless `options[key]` is absent or an integer from `min` to `max` (`name` says whose). */
function checkIntegerOption(
  options: grpc.ChannelOptions | undefined,
  key: string,
  min: number,
  max: number,
  name: string,
): void {
  const value: unknown = options?.[key];
  if (value === undefined) return;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new RangeError(`${key} must be an integer from ${min} to ${max} (${name}), got ${JSON.stringify(value)}`);
  }
}

/**
 * Off unless a caller turns it on: channelz is grpc's introspection service, which nothing here
 * serves, yet grpc-js registers every channel, subchannel, server and socket with it and keeps
 * traces and call counters for each (2 to 3 % of a joining node's CPU in the storm bench's
 * profile, and memory held per connection).
 */
const CHANNELZ_OFF = { 'grpc.enable_channelz': 0 } as const;

function withLimits<T extends grpc.ChannelOptions>(options: T | undefined): T {
  for (const key of LIMIT_KEYS) checkIntegerOption(options, key, 0, MAX_MESSAGE_BYTES, 'MAX_MESSAGE_BYTES');
  return { ...CHANNELZ_OFF, ...grpcMessageLimits, ...options } as T;
}

/** A server closes a connection that has had no call for this long (callers may set their own). */
export const SERVER_CONNECTION_IDLE_MS = 5 * 60_000;

/** The longest call a client of ours makes: the CLI's `init`, which kubeadm's work dominates. */
export const INIT_CALL_DEADLINE_MS = 15 * 60_000;

/**
 * A server stops taking new calls on a connection this old (HTTP/2 GOAWAY; grpc-js adds up to 10 %
 * jitter); a client opens a new one for its next call.
 */
export const SERVER_CONNECTION_AGE_MS = 10 * 60_000;

/**
 * Calls still running that long after the GOAWAY are cut with their connection. Age, jitter and
 * grace together (21 min at most, 19 at least) outlast the longest call a client makes
 * (INIT_CALL_DEADLINE_MS).
 */
export const SERVER_CONNECTION_AGE_GRACE_MS = 10 * 60_000;

/** Each connection bound a server gets, at its longest: callers may shorten one, never lengthen or drop it. */
const SERVER_CONNECTION_BOUNDS = {
  'grpc.max_connection_idle_ms': SERVER_CONNECTION_IDLE_MS,
  'grpc.max_connection_age_ms': SERVER_CONNECTION_AGE_MS,
  'grpc.max_connection_age_grace_ms': SERVER_CONNECTION_AGE_GRACE_MS,
} as const;

/**
 * Server options: the limits, the idle and the age bounds, then `extra`, which may shorten the
 * bounds (a longer one, or -1 for none, is a RangeError: the age bound is the only end of a call
 * that never ends).
 */
export function serverOptions(extra?: grpc.ServerOptions): grpc.ServerOptions {
  for (const [key, longest] of Object.entries(SERVER_CONNECTION_BOUNDS))
    checkIntegerOption(extra, key, 1, longest, 'its default');
  return withLimits({ ...SERVER_CONNECTION_BOUNDS, ...extra });
}

/** A grpc-js server with the message limits and the idle and age bounds; `options` adds to them (e.g. max concurrent streams). */
export function createGrpcServer(options?: grpc.ServerOptions): grpc.Server {
  return new grpc.Server(serverOptions(options));
}

/**
 * Client (channel) options with the message limits merged into `extra`. With `channelOverride`
 * grpc-js uses that channel as it is, so its limits are those of the client that made it: make
 * that client with createClient too.
 */
export function clientOptions(extra?: grpc.ClientOptions): grpc.ClientOptions {
  return withLimits(extra);
}

/** A generated (or generic) grpc-js client class. */
export type GrpcClientConstructor<C> = new (
  address: string,
  credentials: grpc.ChannelCredentials,
  options: grpc.ClientOptions,
) => C;

/** `new Client(address, credentials, clientOptions(extra))`: a client whose channel has the limits. */
export function createClient<C>(
  Client: GrpcClientConstructor<C>,
  address: string,
  credentials: grpc.ChannelCredentials,
  extra?: grpc.ClientOptions,
): C {
  return new Client(address, credentials, clientOptions(extra));
}
