import type { Readable } from 'node:stream';
import { errors, type GatewayError } from '../core/errors.js';
import { redactorFor } from '../core/redact.js';
import { imageTypeOf, MEDIA_HEAD_BYTES, startsLikeVideo, VIDEO_HEAD_BYTES } from '../core/sniff.js';
import type { StreamResponse } from '../http/executor.js';
import { discard, peek } from '../http/streams.js';
import type { Upstream } from '../http/types.js';
import type { VideoDeps } from './deps.js';
import { parseContentRange, requestedStart, type AnsweredRange } from './range.js';

/**
 * A video download passes the vendor's bytes to the client under the gateway's own media type, so
 * an answer that is not the media asked for (an HTML error page, a JSON error, a login form of a
 * proxy, some of which echo the request's credentials) must stop before its first byte reaches the
 * client. Two checks: the declared type must not be a document type, and the first bytes must carry
 * the container's signature. A missing or generic type (`application/octet-stream`, which storage
 * and CDNs send for anything) says nothing, so the bytes decide.
 */

const DOCUMENT_TYPES = new Set(['application/javascript', 'application/ecmascript', 'application/x-javascript', 'application/x-www-form-urlencoded', 'application/pdf']);

/** Whether a declared Content-Type is clearly not media: text, JSON, XML, HTML, script, a form or a multipart. */
export function isDocumentType(declared: string | undefined): boolean {
  const type = mediaTypeOf(declared);
  if (type === '') return false;
  const [top = '', sub = ''] = type.split('/');
  if (top === 'text' || top === 'multipart' || top === 'message') return true;
  return /(json|xml)$/.test(sub) || sub.includes('html') || DOCUMENT_TYPES.has(type);
}

function mediaTypeOf(declared: string | undefined): string {
  return (declared ?? '').split(';')[0]!.trim().toLowerCase();
}

/** What a refusal tells: who answered, and why, for the operator's log; the client hears only `message`. */
export interface Refusal {
  deps: VideoDeps;
  job: string;
  /** Undefined for a stored copy whose upstream is no longer configured. */
  up: Upstream | undefined;
  what: string;
  message: string;
}

/**
 * Logs a refused answer (`res`: a download's; none for the gateway's stored copy) and gives the
 * client's error. Nothing of the body is logged, and the declared type only as a well-formed type,
 * through the upstream's redactor: the vendor chose it.
 */
export function refuseAnswer(r: Refusal, reason: string, res?: StreamResponse, body: Readable | undefined = res?.body): GatewayError {
  discard(body);
  const declared = loggableType(res?.headers['content-type'], r.up);
  r.deps.log.warn({ job: r.job, upstream: r.up?.name, status: res?.status, declared, reason }, `${r.what}: the vendor's answer is not the media asked for; refused`);
  return errors.upstreamError(r.message);
}

/**
 * A type the vendor declared, as the operator's log may show it: only a well-formed type, and that
 * through the upstream's redactor (the vendor chose it, and could have put a credential in it).
 */
export function loggableType(declared: string | undefined, up: Upstream | undefined): string {
  const type = mediaTypeOf(declared);
  if (type === '') return '(none)';
  if (!/^[a-z0-9!#$&^_.+-]{1,64}\/[a-z0-9!#$&^_.+-]{1,64}$/.test(type)) return '(malformed)';
  return up ? redactorFor(up).text(type) : '(unchecked)';
}

/** The refusal of a download that is not the job's video. */
export function notVideo(deps: VideoDeps, job: string, up: Upstream | undefined): Refusal {
  return { deps, job, up, what: 'video download', message: 'The vendor answered with something other than the video.' };
}

/**
 * The range a vendor's 206 holds, checked against the Range the gateway sent (`sent`, if any). A
 * 206 to a request that asked for no range, a Content-Range that is not `bytes <start>-<end>/<total|*>`
 * in integers, a start other than the one asked for, or a Content-Length other than the range's are
 * all refused: the start decides whether the first bytes are sniffed (a vendor claiming an offset
 * would skip the check), and the header goes to the client, rebuilt from these numbers only.
 */
export function answeredRange(r: Refusal, res: StreamResponse, sent: string | undefined): AnsweredRange {
  const refuse = (reason: string): GatewayError =>
    refuseAnswer({ ...r, message: 'The vendor answered the video download with a range other than the one asked for.' }, reason, res);
  if (!sent) throw refuse('a 206 to a request without a Range');
  const answered = parseContentRange(res.headers['content-range']);
  if (!answered) throw refuse('Content-Range missing or malformed');
  if (answered.start !== requestedStart(sent, answered.total)) throw refuse('Content-Range starts elsewhere than the range asked for');
  const length = res.headers['content-length'];
  if (length !== undefined && length !== String(answered.end - answered.start + 1)) throw refuse('Content-Length differs from the Content-Range');
  return answered;
}

/**
 * The vendor's answer for the video, checked (a 200, or a 206 whose range `answeredRange` checked,
 * starting at byte `start`). The first bytes are sniffed when the answer holds them: a whole body,
 * or a range from the file's first byte (a range shorter than the signature is checked on the bytes
 * it has). A range that starts further in cannot be, and has only its declared type checked.
 * Returns the body to stream (with the bytes read put back).
 */
export async function checkedVideo(r: Refusal, res: StreamResponse, start: number): Promise<Readable> {
  if (isDocumentType(res.headers['content-type'])) throw refuseAnswer(r, 'declared a document type', res);
  if (start > 0) return res.body;
  const { head, body, ended } = await peek(res.body, VIDEO_HEAD_BYTES);
  if (!startsLikeVideo(head, ended && res.status === 206)) throw refuseAnswer(r, 'first bytes are not a video container', res, body);
  return body;
}

/** The vendor's preview image (a 200 declaring one of `allowed`), checked; its type is the one its bytes show. */
export async function checkedImage(r: Refusal, res: StreamResponse, allowed: ReadonlySet<string>): Promise<{ body: Readable; type: string }> {
  if (!allowed.has(mediaTypeOf(res.headers['content-type']))) throw refuseAnswer(r, 'declared type is not an allowed image type', res);
  const { head, body } = await peek(res.body, MEDIA_HEAD_BYTES);
  const type = imageTypeOf(head);
  if (!type || !allowed.has(type)) throw refuseAnswer(r, 'first bytes are not an allowed image', res, body);
  return { body, type };
}
