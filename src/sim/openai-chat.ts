import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { bearer, sleep, type SimReply, type SimRequest, type SimServer } from './framework.js';
import { isObject, type JsonObject } from '../core/json.js';
import { countText, estimatePromptTokensSync } from '../chat/tokens.js';

/**
 * OpenAI-compatible `POST /v1/chat/completions` for simulators. The answer is deterministic: it
 * echoes the last user message ("You said: ..."), cut at max_tokens (finish_reason "length").
 * Streaming sends one chunk per word, a finish chunk, the usage-only chunk when
 * `stream_options.include_usage` is set, then `data: [DONE]`.
 *
 * The last user message picks failures, like the video simulators' prompts:
 *   "[moderation]" -> 400 content_policy_violation, "[fail]" -> 500.
 * Settings (sim.settings): apiKey (checked when set), chatChunkDelayMs (pause between streamed
 * chunks), chatUsage ({prompt_tokens, completion_tokens} to report instead of the counted ones),
 * chatOmitUsage (report no usage at all).
 */
export interface ChatSimStats {
  streamsStarted: number;
  streamsCompleted: number;
  /** Streams whose reader went away before the end (the gateway aborted the request). */
  streamsCancelled: number;
}

const stats = new WeakMap<SimServer, ChatSimStats>();

export function chatSimStats(sim: SimServer): ChatSimStats {
  let s = stats.get(sim);
  if (!s) {
    s = { streamsStarted: 0, streamsCompleted: 0, streamsCancelled: 0 };
    stats.set(sim, s);
  }
  return s;
}

export function handleChatCompletions(req: SimRequest, sim: SimServer): SimReply {
  const key = sim.settings.apiKey as string | undefined;
  if (key !== undefined && bearer(req) !== key)
    return openaiError(401, 'Incorrect API key provided.', 'invalid_request_error', null, 'invalid_api_key');
  const body = req.json as unknown;
  if (!isObject(body)) return openaiError(400, 'We could not parse the JSON body of your request.', 'invalid_request_error', null, null);
  if (typeof body.model !== 'string') return openaiError(400, 'you must provide a model parameter', 'invalid_request_error', 'model', null);
  if (!Array.isArray(body.messages) || body.messages.length === 0)
    return openaiError(400, "[] is too short - 'messages'", 'invalid_request_error', 'messages', null);

  const said = lastUserText(body);
  if (said.includes('[moderation]'))
    return openaiError(400, 'Your request was rejected as a result of our safety system.', 'invalid_request_error', null, 'content_policy_violation');
  if (said.includes('[fail]')) return openaiError(500, 'The server had an error while processing your request.', 'server_error', null, null);

  const cap = typeof body.max_completion_tokens === 'number' ? body.max_completion_tokens : typeof body.max_tokens === 'number' ? body.max_tokens : Infinity;
  const { text, finish } = answer(`You said: ${said}`, cap);
  const usage = reportedUsage(sim, body, text);
  const id = `chatcmpl-${randomUUID().replace(/-/g, '').slice(0, 24)}`;
  const created = Math.floor(Date.now() / 1000);
  const base = { id, created, model: body.model, system_fingerprint: 'fp_sim' };

  if (body.stream !== true) {
    return {
      json: {
        ...base,
        object: 'chat.completion',
        choices: [{ index: 0, message: { role: 'assistant', content: text, refusal: null }, logprobs: null, finish_reason: finish }],
        ...(usage ? { usage } : {}),
      },
    };
  }
  const includeUsage = isObject(body.stream_options) && body.stream_options.include_usage === true;
  return {
    headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' },
    body: Readable.from(events(sim, base, text, finish, includeUsage ? usage : undefined, includeUsage)),
  };
}

async function* events(
  sim: SimServer,
  base: JsonObject,
  text: string,
  finish: string,
  usage: JsonObject | undefined,
  includeUsage: boolean,
): AsyncGenerator<string> {
  const s = chatSimStats(sim);
  s.streamsStarted += 1;
  const delay = Number(sim.settings.chatChunkDelayMs ?? 0);
  const chunk = (choices: unknown[], extra: JsonObject = {}) =>
    `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices, ...(includeUsage ? { usage: null } : {}), ...extra })}\n\n`;
  const words = text.match(/\S+\s*/g) ?? [];
  const pieces = [
    chunk([{ index: 0, delta: { role: 'assistant', content: '', refusal: null }, logprobs: null, finish_reason: null }]),
    ...words.map((w) => chunk([{ index: 0, delta: { content: w }, logprobs: null, finish_reason: null }])),
    chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: finish }]),
    ...(usage ? [chunk([], { usage })] : []),
    'data: [DONE]\n\n',
  ];
  let done = false;
  try {
    for (let i = 0; i < pieces.length; i++) {
      if (delay > 0 && i > 0) await sleep(delay);
      yield pieces[i]!;
    }
    done = true;
    s.streamsCompleted += 1;
  } finally {
    if (!done) s.streamsCancelled += 1;
  }
}

function lastUserText(body: JsonObject): string {
  const messages = body.messages as unknown[];
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (!isObject(m) || m.role !== 'user') continue;
    if (typeof m.content === 'string') return m.content;
    if (Array.isArray(m.content))
      return m.content.map((p) => (isObject(p) && typeof p.text === 'string' ? p.text : '')).join(' ').trim();
  }
  return '';
}

/**
 * The reply cut to at most `cap` tokens at a word boundary. A binary search over the number of words
 * keeps a long prompt from costing a count per word (the simulator shares the gateway's process in
 * the embedded default).
 */
function answer(full: string, cap: number): { text: string; finish: string } {
  if (countText(full) <= cap) return { text: full, finish: 'stop' };
  const ends: number[] = [];
  for (const m of full.matchAll(/\S+\s*/g)) ends.push(m.index + m[0].length);
  let lo = 0;
  let hi = ends.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (countText(full.slice(0, ends[mid - 1])) <= cap) lo = mid;
    else hi = mid - 1;
  }
  return { text: lo === 0 ? '' : full.slice(0, ends[lo - 1]), finish: 'length' };
}

function reportedUsage(sim: SimServer, body: JsonObject, text: string): JsonObject | undefined {
  if (sim.settings.chatOmitUsage) return undefined;
  const forced = sim.settings.chatUsage as { prompt_tokens?: number; completion_tokens?: number } | undefined;
  const prompt = forced?.prompt_tokens ?? estimatePromptTokensSync(body);
  const completion = forced?.completion_tokens ?? countText(text);
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  };
}

function openaiError(status: number, message: string, type: string, param: string | null, code: string | null): SimReply {
  return { status, json: { error: { message, type, param, code } } };
}
