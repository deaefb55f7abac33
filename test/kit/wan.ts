import { GatewayError } from '../../src/core/errors.js';
import type { JsonObject } from '../../src/core/json.js';
import type { Upstream, UpstreamResponse } from '../../src/http/types.js';
import type { CreateInput, StandardVideoRequest, TaskRef } from '../../src/video/types.js';
import { videoModule } from '../../src/video/vendors/wan/index.js';
import { makeStd, NOTHING_SENT } from './video.js';

/** Builders of the wan suites (kept free of test-runner imports). */
export const vendor = videoModule.vendor;

export const up: Upstream = {
  name: 'dashscope-intl',
  vendor: 'wan',
  baseUrl: 'https://dashscope-intl.aliyuncs.com',
  apiKey: 'sk-live-0123456789abcdef',
  models: [],
  priority: 0,
  weight: 1,
  timeoutMs: 10_000,
  options: {},
};

export function std(over: Partial<StandardVideoRequest> = {}): StandardVideoRequest {
  return { ...makeStd({ model: 'm', prompt: 'a red fox runs through snow' }), sent: NOTHING_SENT, ...over };
}

export function input(model: string, s: Partial<StandardVideoRequest> = {}, native: JsonObject = {}): CreateInput {
  return { model, upstreamModel: model, std: std({ model, ...s }), native, media: new Map() };
}

export function res(status: number, json: JsonObject, headers: Record<string, string> = {}): UpstreamResponse {
  return { status, headers, json, text: JSON.stringify(json) };
}

export const task: TaskRef = { taskId: '0385dc79-5ff8-4d82-bcb6-5ed7fc9b1b5c', model: 'wan2.6-t2v', upstreamModel: 'wan2.6-t2v', meta: { seconds: 10 } };

/** Runs `fn`, which must throw a 400 GatewayError, and returns the error's param. */
export function rejectParam(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    if (e instanceof GatewayError && e.status === 400) return e.param;
    throw e;
  }
  throw new Error('expected a 400 GatewayError, nothing was thrown');
}
