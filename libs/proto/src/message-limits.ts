/**
 * Upper bound for any single message of our protocols. The largest legitimate message is a
 * control-plane join ticket with the shared PKI (a few tens of KiB) or an init log chunk; 4 MiB
 * leaves room while keeping a hostile peer from making a server buffer much.
 */
export const MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

/** grpc-js channel and server options that enforce MAX_MESSAGE_BYTES in both directions. */
export const grpcMessageLimits = {
  'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
  'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
} as const;
