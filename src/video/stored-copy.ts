import type { Readable } from 'node:stream';
import { errors } from '../core/errors.js';
import type { JsonObject } from '../core/json.js';
import { startsLikeVideo, VIDEO_HEAD_BYTES } from '../core/sniff.js';
import { discard, peek } from '../http/streams.js';
import type { JobRecord } from '../store/job-types.js';
import type { ContentReply } from './content.js';
import type { VideoDeps } from './deps.js';
import { jobUpstream } from './job-upstream.js';
import { notVideo, refuseAnswer } from './media-check.js';
import { parseRange } from './range.js';

/**
 * The mark on a stored output whose bytes were checked to be a video before they were stored
 * (inline-output.ts, when the job's result was taken). Only the gateway writes outputs, and only
 * after that check, so a copy that carries it needs no check when it is served.
 */
export const CHECKED_WHEN_STORED = 'checkedWhenStored';

/**
 * Serves the gateway's own copy (`blob`) of a video the vendor returned inline (`out`, the stored
 * output), `mime` being its stored type.
 *
 * Copies stored before inline results were checked carry no mark, and may hold whatever the vendor
 * sent (an HTML page quoting a credential, say): those are still checked on every download, as
 * they always were, and they are the only ones. A deploy date could not tell them apart (an
 * instance of the earlier version may still be storing copies during a rolling upgrade); the
 * mark can, and a copy stored by such an instance simply lacks it. For an unmarked copy, a
 * download that starts at byte 0 and covers the first bytes has them peeked from the stream it
 * serves; any other range (one further in, or a player's `bytes=0-1` probe) has them read apart,
 * a few bytes of a local file or one more small object read.
 */
export async function openStoredCopy(deps: VideoDeps, job: JobRecord, out: JsonObject, blob: string, mime: string, range: string | undefined): Promise<ContentReply> {
  const gone = () => errors.notFound('The stored video is no longer available.', 'video_not_found');
  const refuse = (body?: Readable) => refuseAnswer(notVideo(deps, job.id, jobUpstream(deps, job)), 'the stored copy does not start like a video', undefined, body);
  const size = await deps.blobs.size(blob);
  if (size === undefined) throw gone();
  const r = parseRange(range, size);
  if (r === 'unsatisfiable') throw errors.rangeNotSatisfiable(size);
  const checked = out[CHECKED_WHEN_STORED] === true;
  const servesHead = !r || (r.start === 0 && r.end >= VIDEO_HEAD_BYTES - 1);
  if (!checked && !servesHead) {
    const head = await firstBytes(deps, blob);
    if (!head) throw gone();
    if (!startsLikeVideo(head)) throw refuse();
  }
  let body = await deps.blobs.open(blob, r?.start, r?.end);
  if (!body) throw gone();
  if (!checked && servesHead) {
    const peeked = await peek(body, VIDEO_HEAD_BYTES);
    body = peeked.body;
    if (!startsLikeVideo(peeked.head)) throw refuse(body);
  }
  const headers: Record<string, string> = { 'content-type': mime, 'accept-ranges': 'bytes' };
  if (r) {
    headers['content-range'] = `bytes ${r.start}-${r.end}/${size}`;
    headers['content-length'] = String(r.end - r.start + 1);
  } else headers['content-length'] = String(size);
  return { status: r ? 206 : 200, headers, body };
}

/** The copy's first bytes, read apart from the download; undefined when the copy is gone. */
async function firstBytes(deps: VideoDeps, blob: string): Promise<Buffer | undefined> {
  const stream = await deps.blobs.open(blob, 0, VIDEO_HEAD_BYTES - 1);
  if (!stream) return undefined;
  const { head, body } = await peek(stream, VIDEO_HEAD_BYTES);
  discard(body);
  return head;
}
