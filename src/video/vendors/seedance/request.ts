import { errors } from '../../../core/errors.js';
import { deepMerge, isObject, omit, type Json, type JsonObject } from '../../../core/json.js';
import type { Upstream, UpstreamRequest } from '../../../http/types.js';
import type { CreateInput, InputReference, StandardVideoRequest } from '../../types.js';
import { DEFAULT_FPS, DEFAULT_SECONDS, seedanceCaps, TASKS_PATH, type SeedanceCaps } from './models.js';

/** A number from a native value that may be a number or a numeric string. */
function numeric(v: Json | undefined): number | undefined {
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
  return Number.isFinite(n) ? n : undefined;
}

function isAuto(v: number | undefined): boolean {
  return v === -1;
}

export function validateSeedance(input: CreateInput): void {
  const { std, native } = input;
  const caps = seedanceCaps(input.upstreamModel, input.model);
  if (std.seconds !== undefined && !Number.isInteger(std.seconds)) {
    throw errors.invalidRequest('Seedance models take a whole number of seconds.', 'seconds');
  }
  if (native.content !== undefined && !Array.isArray(native.content)) {
    throw errors.invalidRequest("'content' must be an array of content blocks.", 'content');
  }
  if (native.frames !== undefined) {
    const f = numeric(native.frames);
    if (f === undefined || !Number.isInteger(f) || f <= 0) throw errors.invalidRequest("'frames' must be a positive integer.", 'frames');
  }
  const nativeDuration = numeric(native.duration);
  const param = native.duration !== undefined ? 'duration' : 'seconds';
  if (isAuto(nativeDuration ?? std.seconds) && !caps.autoDuration) {
    throw errors.invalidRequest(
      `duration -1 (the model picks the length) is only available on Seedance 1.5 pro, not '${input.model}'.`,
      param,
    );
  }
  if (native.draft === true && !caps.draft) {
    throw errors.invalidRequest(`Draft mode is only available on Seedance 1.5 pro, not '${input.model}'.`, 'draft');
  }
}

/**
 * The hold: `frames` (which wins over duration) at 24 fps, else the native duration, else seconds,
 * else the default; -1 holds the family's maximum so whatever the model picks is covered. So does a
 * final render of a draft (a `draft_task` item in `content`): it takes the draft's length, which
 * this request does not state (the bill is what the vendor reports, never more than the hold).
 */
export function estimateSeedanceSeconds(input: Omit<CreateInput, 'media'>): number {
  const { std, native } = input;
  const caps = seedanceCaps(input.upstreamModel, input.model);
  if (Array.isArray(native.content) && native.content.some((c) => isObject(c) && c.type === 'draft_task')) return caps.maxSeconds;
  const frames = numeric(native.frames);
  if (frames !== undefined && frames > 0) return Math.ceil(frames / DEFAULT_FPS);
  const wanted = numeric(native.duration) ?? std.seconds;
  if (isAuto(wanted)) return caps.maxSeconds;
  return wanted !== undefined && wanted > 0 ? wanted : DEFAULT_SECONDS;
}

function refKind(r: InputReference): 'image' | 'video' | 'audio' {
  const t = `${r.type} ${r.role ?? ''}`.toLowerCase();
  if (t.includes('video')) return 'video';
  if (t.includes('audio')) return 'audio';
  return 'image';
}

const REF_BLOCK = {
  image: (url: string): JsonObject => ({ type: 'image_url', image_url: { url }, role: 'reference_image' }),
  video: (url: string): JsonObject => ({ type: 'video_url', video_url: { url }, role: 'reference_video' }),
  audio: (url: string): JsonObject => ({ type: 'audio_url', audio_url: { url }, role: 'reference_audio' }),
};

/** content[]: the prompt, the pinned frames, then references where the family reads them. */
export function derivedContent(std: StandardVideoRequest, caps: SeedanceCaps): Json[] {
  const content: Json[] = [];
  if (std.prompt) content.push({ type: 'text', text: std.prompt });
  for (const f of std.frameImages) content.push({ type: 'image_url', image_url: { url: f.url }, role: f.frameType });
  for (const r of std.inputReferences) {
    const kind = refKind(r);
    if (caps.references.has(kind)) content.push(REF_BLOCK[kind](r.url));
  }
  return content;
}

export function buildSeedanceBody(input: CreateInput): JsonObject {
  const { std, native } = input;
  const caps = seedanceCaps(input.upstreamModel, input.model);
  const body: JsonObject = { model: input.upstreamModel, content: derivedContent(std, caps) };
  // Ark names tiers by the short side in lower case ("720p" for 1280x720 and 720x1280 alike).
  const tier = std.size ? Math.min(std.size.width, std.size.height) : std.resolution;
  if (tier !== undefined) body.resolution = `${tier}p`;
  if (std.aspectRatio) body.ratio = std.aspectRatio.toLowerCase() === 'auto' ? 'adaptive' : std.aspectRatio;
  if (std.seconds !== undefined) body.duration = std.seconds;

  const merged = deepMerge(body, omit(native, ['content']));
  if (Array.isArray(native.content) && native.content.length > 0) merged.content = native.content;
  // frames and duration are mutually exclusive at Ark; frames wins whatever set the duration.
  if (native.frames !== undefined && native.frames !== null) delete merged.duration;
  return merged;
}

/** Ark documents its base as .../api/v3; accept an origin or a base that already ends there. */
export function tasksUrl(up: Upstream): string {
  const base = up.baseUrl.replace(/\/+$/, '');
  return base.endsWith('/api/v3') ? `${base}${TASKS_PATH.slice('/api/v3'.length)}` : `${base}${TASKS_PATH}`;
}

export function authHeaders(up: Upstream): Record<string, string> {
  return up.apiKey ? { authorization: `Bearer ${up.apiKey}` } : {};
}

export function buildSeedanceCreate(input: CreateInput, up: Upstream): UpstreamRequest {
  return {
    method: 'POST',
    url: tasksUrl(up),
    headers: { ...authHeaders(up), 'content-type': 'application/json' },
    body: buildSeedanceBody(input),
  };
}
