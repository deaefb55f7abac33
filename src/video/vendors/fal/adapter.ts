import { errors } from '../../../core/errors.js';
import { falCallbackSignature } from './signature.js';
import { deepMerge, isObject, omit, type Json, type JsonObject } from '../../../core/json.js';
import type { Upstream, UpstreamRequest, UpstreamResponse } from '../../../http/types.js';
import type { CreateInput, CreatedTask, TaskRef, VendorStatus, VideoOutput, VideoVendor } from '../../types.js';
import { classify } from './errors.js';
import { appPath, familyOf, formatDuration, nativeDuration, parseSeconds, resolutionLabel, type Family } from './families.js';
import { isStatusPayload, readResult, readStatus } from './poll.js';

/**
 * Native names fal models take that no standard or cross-vendor-common name covers (spec 2.3 rule 3).
 * Names another vendor also owns (first_frame_url, audio_url, shot_type, generate_audio, ...) are
 * claimed too, or that vendor's ownership would make fal reject them (enhance_prompt is Veo's and
 * fal's Veo models'). `video_url` stays unclaimed: wan accepts it without claiming it.
 */
const OWNED = [
  'image_url',
  'image_urls',
  'start_image_url',
  'end_image_url',
  'tail_image_url',
  'first_frame_url',
  'last_frame_url',
  'audio_url',
  'enable_safety_checker',
  'safety_tolerance',
  'cfg_scale',
  'guidance_scale',
  'num_inference_steps',
  'enable_prompt_expansion',
  'enhance_prompt',
  'prompt_optimizer',
  'auto_fix',
  'generate_audio',
  'sync_mode',
  'multi_prompt',
  'shot_type',
  'elements',
  'voice_ids',
  'camera_control',
  'webhook_url',
];

/** Native names the adapter moves out of the body (into the URL) instead of forwarding them there. */
const NOT_IN_BODY = ['webhook_url'];

/** The submit answer's fields the job keeps to poll, cancel and fetch the request by. */
const CREATE_META = ['status_url', 'response_url', 'cancel_url', 'gateway_request_id'];

function familyFor(input: Pick<CreateInput, 'upstreamModel'>, up?: Upstream): Family {
  return familyOf(input.upstreamModel, up?.options['duration_formats']);
}

function authHeaders(up: Upstream): Record<string, string> {
  const h: Record<string, string> = { accept: 'application/json' };
  if (up.apiKey) h['authorization'] = `Key ${up.apiKey}`;
  return h;
}

/** The model's submit path, each segment escaped, slashes kept ("fal-ai/veo3/fast"). */
function modelPath(model: string): string {
  return model
    .replace(/^\/+|\/+$/g, '')
    .split('/')
    .map(encodeURIComponent)
    .join('/');
}

/** The model input fal receives: what the standard fields say, with the client's native fields merged over it. */
function buildBody(input: Omit<CreateInput, 'media'>, family: Family): JsonObject {
  const { std, native } = input;
  const derived: JsonObject = { prompt: std.prompt };
  if (std.seconds !== undefined) derived['duration'] = formatDuration(std.seconds, family.format);
  if (std.aspectRatio !== undefined) derived['aspect_ratio'] = std.aspectRatio;
  if (family.resolution && std.resolution !== undefined) derived['resolution'] = resolutionLabel(std.resolution);
  for (const f of std.frameImages) {
    derived[f.frameType === 'first_frame' ? family.frames.first : family.frames.last] = f.url;
  }
  // Reference images only mean something to reference-to-video endpoints; others ignore them (spec 2.2).
  const refs = std.inputReferences.filter((r) => r.type === 'image').map((r) => r.url);
  if (refs.length > 0 && /reference-to-video/.test(input.upstreamModel)) derived['image_urls'] = refs;

  const body = deepMerge(derived, omit(native, NOT_IN_BODY));
  if (native['duration'] !== undefined) body['duration'] = nativeDuration(native['duration'], family.format);
  return body;
}

/** Native names fal models use for the frame rate beside `num_frames`. */
const FRAME_RATE_NAMES = ['fps', 'frame_rate', 'frames_per_second'] as const;

/**
 * Native names a fal model takes for how many videos to make: `num_videos` (fal's spelling, as
 * `num_images` on its image models) and the cross-vendor-common `n`, both forwarded as sent.
 */
const COUNT_NAMES = ['num_videos', 'n'] as const;

/**
 * How many videos a request can produce: the largest count it sends under any of COUNT_NAMES (a
 * numeric string too, which fal's input validation coerces; a fraction rounded up), 1 without one.
 * Which of the names a model reads is the model's business, so the hold covers the largest. A
 * model that takes no count makes one video whatever was sent: the hold is then larger than the
 * bill, never smaller, and the capture follows the videos that came back.
 */
function requestedVideos(input: Pick<CreateInput, 'native'>): number {
  let most = 1;
  for (const name of COUNT_NAMES) {
    const v = input.native[name];
    const n = typeof v === 'number' ? v : typeof v === 'string' && /^\s*\d+(\.\d+)?\s*$/.test(v) ? Number(v) : NaN;
    if (n > most) most = Math.ceil(n);
  }
  return most;
}

/** What the hold covers: the seconds of one video times every video the request asks for. */
function heldSeconds(input: Omit<CreateInput, 'media'>): number {
  return requestedSeconds(input) * requestedVideos(input);
}

/**
 * The seconds a request asks for, per video: the client's own duration, else its frame count over
 * its frame rate (models sized in frames), else `seconds`, else the family default. The hold is
 * taken on it and billing never goes above the hold, so a length the request sets must be read here.
 */
function requestedSeconds(input: Omit<CreateInput, 'media'>): number {
  const fromNative = parseSeconds(input.native['duration']);
  if (fromNative !== undefined && fromNative > 0) return fromNative;
  const frames = input.native['num_frames'];
  const rate = FRAME_RATE_NAMES.map((k) => input.native[k]).find((v) => typeof v === 'number' && v > 0);
  if (typeof frames === 'number' && frames > 0 && typeof rate === 'number') {
    const seconds = Math.ceil((frames / rate) * 1000) / 1000;
    if (Number.isFinite(seconds) && seconds > 0) return seconds;
  }
  return input.std.seconds ?? familyFor(input).defaultSeconds;
}

/**
 * Status and response URLs come from fal's answers. The key is only sent to the configured origin,
 * to fal's own hosts (*.fal.run, *.fal.ai) over https, or to hosts listed in `trusted_hosts`.
 */
function trusted(url: Json | undefined, up: Upstream): string | undefined {
  if (typeof url !== 'string') return undefined;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return undefined;
  }
  const base = new URL(up.baseUrl);
  if (u.origin === base.origin) return url;
  const extra = up.options['trusted_hosts'];
  if (Array.isArray(extra) && extra.includes(u.hostname) && (u.protocol === 'https:' || u.protocol === base.protocol)) return url;
  const falHost = u.hostname === 'fal.run' || u.hostname.endsWith('.fal.run') || u.hostname.endsWith('.fal.ai');
  return u.protocol === 'https:' && falHost ? url : undefined;
}

/** The documented URL layout, used only when fal's own URL is missing or not trusted. */
function requestUrl(task: TaskRef, up: Upstream, suffix: string): string {
  const app = typeof task.meta['app'] === 'string' ? task.meta['app'] : appPath(task.upstreamModel);
  return `${up.baseUrl}/${modelPath(app)}/requests/${encodeURIComponent(task.taskId)}${suffix}`;
}

function resultRequest(task: TaskRef, up: Upstream, fromStatus?: string): UpstreamRequest {
  const url = trusted(fromStatus, up) ?? trusted(task.meta['response_url'], up) ?? requestUrl(task, up, '');
  return { method: 'GET', url, headers: authHeaders(up) };
}

export const falVendor: VideoVendor = {
  id: 'fal',
  inlineVideo: true,
  label: 'fal (queue)',
  ownedParams: new Set(OWNED),
  // Sent upstream as the fal_webhook query parameter.
  callbackParam: 'webhook_url',
  callbackSignature: falCallbackSignature,

  validate(input) {
    const family = familyFor(input);
    const s = input.std.seconds;
    // A native duration replaces `seconds` upstream, so only a `seconds` that will be sent is checked.
    if (s !== undefined && input.native['duration'] === undefined && family.allowed && !family.allowed.includes(s)) {
      throw errors.invalidRequest(
        `Model '${input.model}' accepts seconds of ${describe(family.allowed)}; got ${s}.`,
        'seconds',
      );
    }
    const hook = input.native['webhook_url'];
    if (hook !== undefined && (typeof hook !== 'string' || !/^https?:\/\//.test(hook))) {
      throw errors.invalidRequest('webhook_url must be an http(s) URL.', 'webhook_url');
    }
  },

  estimateSeconds: heldSeconds,

  buildCreate(input, up) {
    const family = familyFor(input, up);
    const hook = input.native['webhook_url'];
    const query = typeof hook === 'string' ? `?fal_webhook=${encodeURIComponent(hook)}` : '';
    const headers: Record<string, string> = { ...authHeaders(up), 'content-type': 'application/json' };
    const lifecycle = up.options['object_lifecycle_seconds'];
    if (typeof lifecycle === 'number' && lifecycle > 0) {
      headers['x-fal-object-lifecycle-preference'] = JSON.stringify({ expiration_duration_seconds: lifecycle });
    }
    if (up.options['no_retry'] === true) headers['x-fal-no-retry'] = '1';
    return {
      method: 'POST',
      url: `${up.baseUrl}/${modelPath(input.upstreamModel)}${query}`,
      headers,
      body: buildBody(input, family),
    };
  },

  parseCreate(res: UpstreamResponse, input): CreatedTask {
    const body = res.json;
    const id = isObject(body) ? body['request_id'] : undefined;
    if (typeof id !== 'string' || id.length === 0) throw errors.upstreamError('fal accepted the request but returned no request_id.');
    const meta: JsonObject = { app: appPath(input.upstreamModel), seconds: requestedSeconds(input) };
    for (const k of CREATE_META) {
      const v = (body as JsonObject)[k];
      if (typeof v === 'string') meta[k] = v;
    }
    // The rest (queue_position ...) as a status answer's is kept: without what the job now holds.
    return { taskId: id, meta, vendorData: omit(body as JsonObject, ['request_id', 'status', ...CREATE_META]) };
  },

  buildPoll(task, up) {
    const url = trusted(task.meta['status_url'], up) ?? requestUrl(task, up, '/status');
    return { method: 'GET', url, headers: authHeaders(up) };
  },

  // PUT .../cancel: 202 while the request is still queued; a running or finished one answers 400.
  buildCancel: (task, up) => ({ method: 'PUT', url: trusted(task.meta['cancel_url'], up) ?? requestUrl(task, up, '/cancel'), headers: authHeaders(up) }),

  parsePoll(res, task, up): VendorStatus | { next: UpstreamRequest; vendorData?: JsonObject } {
    const body = res.json;
    // An unreadable 2xx proves nothing either way; keep polling rather than fail a job that may finish.
    if (!isObject(body)) return { state: 'processing', vendorData: {} };
    if (isStatusPayload(body)) {
      const step = readStatus(body);
      if (step.step === 'processing') return { state: 'processing', ...(step.phase ? { phase: step.phase } : {}), vendorData: step.vendorData };
      if (step.step === 'done') return step.status;
      // The status answer's own fields (logs, metrics.inference_time ...) stay in vendor_data.
      return { next: resultRequest(task, up, step.responseUrl), vendorData: omit(body, ['status']) };
    }
    const sent = typeof task.meta['seconds'] === 'number' ? task.meta['seconds'] : familyOf(task.upstreamModel).defaultSeconds;
    return readResult(body, sent);
  },

  buildContent(_task, output: VideoOutput) {
    // fal's CDN links are public; the key is never sent there.
    if (!output.url) throw errors.internal('This fal output has no URL to fetch.');
    return { method: 'GET', url: output.url, headers: {} };
  },

  classifyError: classify,
};

function describe(allowed: readonly number[]): string {
  const contiguous = allowed.every((v, i) => i === 0 || v === allowed[i - 1]! + 1);
  return contiguous && allowed.length > 2 ? `${allowed[0]} to ${allowed[allowed.length - 1]}` : allowed.join(', ');
}
