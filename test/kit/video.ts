import type { JsonObject } from '../../src/core/json.js';
import type { Executor } from '../../src/http/executor.js';
import type { Upstream, UpstreamResponse } from '../../src/http/types.js';
import { sleep } from '../../src/sim/framework.js';
import type { CreateInput, InlineMedia, StandardVideoRequest, TaskRef, VendorStatus, VideoVendor } from '../../src/video/types.js';

/**
 * The test-builder kit of the vendor suites (test/vendors/<id>/); it lives under test/, so it never
 * reaches dist/. Generic builders here; per-vendor defaults in the files beside it.
 */

export const NOTHING_SENT: StandardVideoRequest['sent'] = { size: false, resolution: false, aspectRatio: false };

export function makeStd(over: Partial<StandardVideoRequest> = {}): StandardVideoRequest {
  return {
    model: 'sora-2',
    prompt: 'a red fox running through snow',
    frameImages: [],
    inputReferences: [],
    sent: { size: over.size !== undefined, resolution: over.resolution !== undefined, aspectRatio: over.aspectRatio !== undefined },
    ...over,
  };
}

export function makeInput(opts: {
  std?: Partial<StandardVideoRequest>;
  native?: JsonObject;
  model?: string;
  upstreamModel?: string;
  media?: Map<string, InlineMedia>;
}): CreateInput {
  const model = opts.model ?? opts.std?.model ?? 'sora-2';
  return {
    model,
    upstreamModel: opts.upstreamModel ?? model,
    std: makeStd({ model, ...opts.std }),
    native: opts.native ?? {},
    media: opts.media ?? new Map(),
  };
}

export function makeUpstream(over: Partial<Upstream> = {}): Upstream {
  return {
    name: 'test-upstream',
    vendor: 'sora',
    baseUrl: 'https://api.openai.com',
    apiKey: 'sk-test-key-0001',
    models: ['sora-2'],
    priority: 0,
    weight: 1,
    timeoutMs: 10_000,
    options: {},
    ...over,
  };
}

export function jsonResponse(status: number, json: unknown, headers: Record<string, string> = {}): UpstreamResponse {
  return { status, headers: { 'content-type': 'application/json', ...headers }, json: json as never, text: JSON.stringify(json) };
}

/** Creates a job through the executor and polls it to a final state, recording every state seen. */
export async function runJob(
  vendor: VideoVendor,
  executor: Executor,
  up: Upstream,
  input: CreateInput,
  opts: { pollMs?: number; maxMs?: number } = {},
): Promise<{ task: TaskRef; final: VendorStatus; seen: VendorStatus[]; polls: UpstreamResponse[] }> {
  const created = await executor.send(vendor.buildCreate(input, up), up.timeoutMs);
  if (created.status < 200 || created.status >= 300) {
    throw new Error(`create failed: ${created.status} ${created.text}`);
  }
  const ref = vendor.parseCreate(created, input, up);
  const task: TaskRef = { taskId: ref.taskId, model: input.model, upstreamModel: input.upstreamModel, meta: ref.meta ?? {} };
  const seen: VendorStatus[] = [];
  const polls: UpstreamResponse[] = [];
  const deadline = Date.now() + (opts.maxMs ?? 10_000);
  while (Date.now() < deadline) {
    const res = await executor.send(vendor.buildPoll(task, up), up.timeoutMs);
    if (res.status !== 200) throw new Error(`poll failed: ${res.status} ${res.text}`);
    polls.push(res);
    const st = vendor.parsePoll(res, task, up);
    if ('next' in st) throw new Error('unexpected follow-up request');
    seen.push(st);
    if (st.state !== 'processing') return { task, final: st, seen, polls };
    await sleep(opts.pollMs ?? 20);
  }
  throw new Error('job did not finish in time');
}
