import { randomBytes } from 'node:crypto';
import { readMp4Header } from '../../../core/mp4-header.js';
import { sniffVideo } from '../../../core/sniff.js';
import type { SimReply, SimRequest, SimServer } from '../../../sim/framework.js';
import { readBody, type SimBody } from '../../../sim/openai-videos.js';
import type { SimTask, TaskBook } from '../../../sim/tasks.js';
import { oaiError, videoObject } from './simulator-objects.js';

/**
 * The Sora simulator's edits, extensions and characters, as the API takes them: POST
 * /v1/videos/edits and /v1/videos/extensions with `video` as an uploaded file or as `{id}` of a
 * completed video (a JSON body's `video: {id}`, or the form field `video[id]` that the official SDK
 * writes), and POST /v1/videos/characters (multipart `name` and the file `video`) with GET
 * /v1/videos/characters/{id}. An extension's video object reports the stitched total in `seconds`.
 * Marker: "[short-segment]" in an extension's prompt makes its new segment a second shorter than asked.
 */
const EXTEND_SECONDS = ['4', '8', '12', '16', '20'];

interface Source {
  task?: SimTask;
  seconds: number;
  size: string;
  model: string;
}

function isSource(s: Source | SimReply): s is Source {
  return typeof (s as Source).seconds === 'number';
}

function sourceOf(body: SimBody, book: TaskBook): Source | SimReply {
  const file = body.files.find((f) => f.field === 'video');
  const ref = body.fields.video;
  const id = body.multipart ? body.fields['video[id]'] : ref && typeof ref === 'object' ? ref.id : ref;
  if (file && id !== undefined) return oaiError(400, "Provide either an uploaded video or a video id, not both.", 'video', 'invalid_value');
  if (file) {
    if (!sniffVideo(file.data)) return oaiError(400, 'The uploaded video could not be decoded.', 'video', 'invalid_value');
    const head = readMp4Header(file.data);
    const size = head.width && head.height ? `${head.width}x${head.height}` : '720x1280';
    return { seconds: Math.max(1, Math.round(head.seconds ?? 4)), size, model: 'sora-2' };
  }
  if (typeof id !== 'string' || id === '') return oaiError(400, "Missing required parameter: 'video'.", 'video', 'missing_required_parameter');
  const task = book.get(id);
  if (!task) return oaiError(404, `Video with id '${id}' not found.`, 'video', 'not_found');
  if (videoObject(book, task).status !== 'completed') return oaiError(400, `Video '${id}' is not completed.`, 'video', 'invalid_request');
  return { task, seconds: task.seconds, size: task.data.size, model: task.data.model };
}

/** POST /v1/videos/edits and /v1/videos/extensions. */
export async function derive(req: SimRequest, sim: SimServer, book: TaskBook, op: 'edit' | 'extend'): Promise<SimReply> {
  const body = await readBody(req);
  if (!body) return oaiError(400, 'We could not parse the body of your request.');
  const prompt = body.fields.prompt;
  if (typeof prompt !== 'string' || prompt === '') return oaiError(400, "Missing required parameter: 'prompt'.", 'prompt', 'missing_required_parameter');
  let segment = 0;
  if (op === 'extend') {
    const s = body.fields.seconds;
    if (typeof s !== 'string') return oaiError(400, "Missing required parameter: 'seconds'.", 'seconds', 'missing_required_parameter');
    if (!EXTEND_SECONDS.includes(s)) return oaiError(400, `Invalid value: '${s}'. Supported values are: '4', '8', '12', '16', and '20'.`, 'seconds', 'invalid_value');
    segment = Number(s) - (prompt.includes('[short-segment]') ? 1 : 0);
  }
  const source = sourceOf(body, book);
  if (!isSource(source)) return source;
  const task = book.create({
    prompt,
    seconds: source.seconds + segment,
    durationMs: sim.settings.taskMs,
    id: `video_${randomBytes(24).toString('hex')}`,
    data: { model: source.model, size: source.size, prompt, traceId: randomBytes(8).toString('hex') },
  });
  return { status: 200, json: videoObject(book, task) };
}

export interface SimCharacter {
  id: string;
  name: string;
  created_at: number;
}

/** POST /v1/videos/characters and GET /v1/videos/characters/{id}; undefined for any other path. */
export async function characters(req: SimRequest, characters: Map<string, SimCharacter>): Promise<SimReply | undefined> {
  if (req.method === 'POST' && req.path === '/v1/videos/characters') {
    const body = await readBody(req);
    if (!body?.multipart) return oaiError(400, 'A character is created from a multipart form with a video file.');
    const name = body.fields.name;
    if (typeof name !== 'string' || name === '' || name.length > 80)
      return oaiError(400, "Invalid 'name': expected a string of 1 to 80 characters.", 'name', 'invalid_value');
    const file = body.files.find((f) => f.field === 'video');
    if (!file || !sniffVideo(file.data)) return oaiError(400, "Missing required parameter: 'video'.", 'video', 'missing_required_parameter');
    const c: SimCharacter = { id: `char_${randomBytes(16).toString('hex')}`, name, created_at: Math.floor(Date.now() / 1000) };
    characters.set(c.id, c);
    return { status: 200, json: c };
  }
  const m = /^\/v1\/videos\/characters\/([^/]+)$/.exec(req.path);
  if (req.method === 'GET' && m) {
    const c = characters.get(decodeURIComponent(m[1]!));
    return c ? { status: 200, json: c } : oaiError(404, `Character '${decodeURIComponent(m[1]!)}' not found.`, null, 'not_found');
  }
  return undefined;
}
