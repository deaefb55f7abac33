/**
 * What one upstream embeddings call can legitimately send back, so that an answer beyond it is
 * abandoned unread instead of parsed. Without this bound only `server.max_answer_bytes` (64 MiB)
 * applied, and a single-input call answered by one 12-million-value vector (48 MB) held the event
 * loop for about two seconds while it was parsed.
 */

/**
 * The longest vector taken from an upstream. The largest embedding models answer 4,096 values
 * (3,072 for OpenAI text-embedding-3-large and gemini-embedding-001, 1,408 for Vertex multimodal),
 * and a few allow 8,192. A longer vector is a malformed answer.
 */
export const MAX_VECTOR_DIMENSIONS = 8_192;

/**
 * JSON text per vector value: the longest shortest-round-trip float is 24 characters
 * (`-2.2250738585072014e-308`); the rest leaves room for a separator and the newline and
 * indentation of a pretty-printed answer (Google's APIs pretty-print by default).
 */
export const MAX_JSON_BYTES_PER_VALUE = 48;

/** Each vector's own members besides its values (`index`, `object`, Vertex `statistics`, ...). */
export const MAX_BYTES_PER_VECTOR_ENVELOPE = 2 * 1024;

/** The answer's members besides its vectors (usage, model, metadata), whatever the number of inputs. */
export const MAX_ANSWER_ENVELOPE_BYTES = 64 * 1024;

/**
 * The most bytes an answer to a call embedding `inputs` inputs may take: one vector per input of at
 * most MAX_VECTOR_DIMENSIONS values written in JSON, plus the envelope. `server.max_answer_bytes`
 * still caps it (the executor takes the smaller), so a large batch is bounded as before.
 */
export function maxAnswerBytesFor(inputs: number): number {
  return MAX_ANSWER_ENVELOPE_BYTES + inputs * (MAX_VECTOR_DIMENSIONS * MAX_JSON_BYTES_PER_VALUE + MAX_BYTES_PER_VECTOR_ENVELOPE);
}

/**
 * The answer one upstream call is planned to send at most: a request whose vectors would take more
 * is split over more calls. An answer read whole is parsed in one piece (or at least copied and
 * scanned), so its size is the event loop's longest wait: 16 MiB of JSON parse in ~0.15 s, where
 * 2,048 vectors of 3,072 floats in one call are ~130 MB, over `server.max_answer_bytes` (a 502 for a
 * request OpenAI itself serves).
 */
export const PLANNED_CALL_ANSWER_BYTES = 16 * 1024 * 1024;

/** Values per vector assumed when a request names no `dimensions`: the largest common default (text-embedding-3-large, gemini-embedding-001). */
export const ASSUMED_DIMENSIONS = 3_072;

/**
 * JSON text per value planned for: OpenAI writes ~12-20 characters a float, Google's pretty-printed
 * answers more. Float even for a base64 request, since an upstream may answer floats regardless
 * (`supports_base64: false`), which the gateway then encodes.
 */
const PLANNED_BYTES_PER_VALUE = 24;

/** The most inputs one call may carry so its answer stays within PLANNED_CALL_ANSWER_BYTES. */
export function maxInputsPerCall(dimensions: number | undefined): number {
  const values = Math.min(MAX_VECTOR_DIMENSIONS, dimensions ?? ASSUMED_DIMENSIONS);
  return Math.max(1, Math.floor(PLANNED_CALL_ANSWER_BYTES / (values * PLANNED_BYTES_PER_VALUE + MAX_BYTES_PER_VECTOR_ENVELOPE / 8)));
}
