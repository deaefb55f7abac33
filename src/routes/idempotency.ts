import { createHash, type Hash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import '../auth/types.js';
import { errors } from '../core/errors.js';
import { isObject, type Json, type JsonObject } from '../core/json.js';
import type { IdempotencyClaim } from '../store/idempotency-types.js';
import type { VideoService } from '../video/service.js';

/** 1-255 printable ASCII characters (space to tilde), as Stripe takes them. */
const KEY = /^[\x20-\x7e]{1,255}$/;

/** The request's `Idempotency-Key`, undefined when it sent none; 400 when it is not a key. */
export function idempotencyKeyOf(req: FastifyRequest): string | undefined {
  const raw = req.headers['idempotency-key'];
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string' || !KEY.test(raw))
    throw errors.invalidRequest("The 'Idempotency-Key' header must be 1-255 printable ASCII characters.", 'Idempotency-Key');
  return raw;
}

/** What a request is judged the same by: its path parameters, its fields (any order of keys) and its file. */
export interface RequestShape {
  params?: Record<string, string>;
  fields: JsonObject;
  file?: Buffer;
}

/**
 * sha256 over the request's canonical form: object keys sorted, so a client that sends the same
 * fields in another order (or a form with another boundary) is the same request; the file by its
 * own sha256. The body's nesting is bounded (64 levels, http/json-depth.ts) before it gets here.
 */
export function fingerprintOf(shape: RequestShape): string {
  const h = createHash('sha256');
  feed(h, { params: shape.params ?? {}, fields: shape.fields });
  if (shape.file) h.update(`\0file:${createHash('sha256').update(shape.file).digest('hex')}`);
  return h.digest('hex');
}

function feed(h: Hash, v: Json | undefined): void {
  if (Array.isArray(v)) {
    h.update('[');
    for (const item of v) {
      feed(h, item);
      h.update(',');
    }
    h.update(']');
  } else if (isObject(v)) {
    h.update('{');
    for (const k of Object.keys(v).sort()) {
      h.update(JSON.stringify(k));
      h.update(':');
      feed(h, v[k]);
      h.update(',');
    }
    h.update('}');
  } else {
    h.update(JSON.stringify(v ?? null));
  }
}

/** How an answer that names no job (a character) is kept, and rendered again from what was kept. */
export interface KeptAnswer {
  keep(answer: JsonObject): JsonObject;
  render(kept: JsonObject): JsonObject;
}

/**
 * Runs a request that creates billable work under its `Idempotency-Key`, if it sent one (scope: the
 * caller's account; the key is bound to this endpoint and these fields). Checked before anything is
 * admitted or held: a repeat of a request that made a job gets that job as it is now (as a poll
 * would render it), with the first answer's status and `Idempotent-Replayed: true`, and counts
 * against no rate limit; a repeat while the first runs is 409, another request under the key 422.
 * `run` gets the claim to hand to the create (CreateControl.idempotency), which links its job.
 */
export async function idempotent(
  req: FastifyRequest,
  reply: FastifyReply,
  video: VideoService,
  shape: RequestShape,
  run: (claim: IdempotencyClaim | undefined) => Promise<JsonObject>,
  kept?: KeptAnswer,
): Promise<JsonObject> {
  const key = idempotencyKeyOf(req);
  if (key === undefined) return run(undefined);
  const endpoint = `${req.method} ${req.routeOptions.url}`;
  const start = await video.idempotency.start(req.auth.account.id, key, endpoint, fingerprintOf(shape));
  if ('replay' in start) {
    const { jobId, answer, status } = start.replay;
    const body = jobId !== null ? await video.replay(req.auth, jobId) : kept && answer !== null ? kept.render(JSON.parse(answer) as JsonObject) : undefined;
    if (!body) throw errors.internal();
    reply.code(status).header('idempotent-replayed', 'true');
    return body;
  }
  let answer: JsonObject;
  try {
    answer = await run(start.run);
  } catch (e) {
    // Nothing to answer again: a retry processes anew (its refusal, a 402, 429 or 503, may not recur).
    await video.idempotency.release(start.run).catch((err: Error) => req.log.warn({ err: err.message }, 'releasing an idempotency key failed'));
    throw e;
  }
  // Not recorded (the store failing now): repeats of a job's request are still answered from the
  // job linked to the key; a kept answer is lost, and repeats meet 409 until the key is abandoned.
  await video.idempotency
    .finish(start.run, reply.statusCode, kept ? JSON.stringify(kept.keep(answer)) : null)
    .catch((err: Error) => req.log.warn({ err: err.message }, 'recording an idempotency key failed'));
  return answer;
}
