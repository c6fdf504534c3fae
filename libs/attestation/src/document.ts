import { AttestationDocument } from '@constellation/proto';
import { AttestationError } from './errors.js';
import { errorMessage } from '@constellation/errors';

/**
 * Largest serialized document we decode: ~1.5 KiB without an event log, which adds up to
 * MAX_EVENT_LOG_BYTES (64 KiB). Earlier verifiers took 64 KiB in all: a node with a log over
 * about 60 KiB is refused by them, naming the size (docs/attestation.md, "Event log").
 */
export const MAX_DOCUMENT_BYTES = 96 * 1024;
const MAX_QUOTES = 4;
const MAX_PCR_VALUES = 24;
const MAX_EVENTS = 512;

/** Decodes a document with size and count limits; anything malformed is an AttestationError("malformed"). */
export function decodeDocument(bytes: Uint8Array): AttestationDocument {
  if (bytes.length === 0) throw new AttestationError('malformed', 'attestation document is empty');
  if (bytes.length > MAX_DOCUMENT_BYTES) {
    throw new AttestationError(
      'malformed',
      `attestation document of ${bytes.length} bytes exceeds ${MAX_DOCUMENT_BYTES}`,
    );
  }
  let doc: AttestationDocument;
  try {
    doc = AttestationDocument.decode(bytes);
  } catch (err) {
    throw new AttestationError(
      'malformed',
      `attestation document is not a valid protobuf message: ${errorMessage(err)}`,
    );
  }
  if (doc.quotes.length === 0) throw new AttestationError('malformed', 'attestation document has no quote');
  if (doc.quotes.length > MAX_QUOTES) {
    throw new AttestationError(
      'malformed',
      `attestation document has ${doc.quotes.length} quotes, at most ${MAX_QUOTES} allowed`,
    );
  }
  for (const [i, quote] of doc.quotes.entries()) {
    if (quote.pcrs.length > MAX_PCR_VALUES) {
      throw new AttestationError(
        'malformed',
        `quote ${i} carries ${quote.pcrs.length} PCR values, at most ${MAX_PCR_VALUES} allowed`,
      );
    }
  }
  if (doc.eventLog.length > MAX_EVENTS) {
    throw new AttestationError(
      'malformed',
      `event log has ${doc.eventLog.length} entries, at most ${MAX_EVENTS} allowed`,
    );
  }
  return doc;
}

/** Serializes a document. */
export function encodeDocument(doc: AttestationDocument): Buffer {
  return Buffer.from(AttestationDocument.encode(doc).finish());
}
