import type { JsonObject } from '../../src/core/json.js';
import type { Upstream } from '../../src/http/types.js';
import type { CreateInput, InlineMedia, StandardVideoRequest } from '../../src/video/types.js';
import { makeStd, NOTHING_SENT } from './video.js';

/** Builders shared by the Veo tests. */
export function std(over: Partial<StandardVideoRequest> = {}): StandardVideoRequest {
  return { ...makeStd({ model: 'veo-3.1-generate-001' }), sent: NOTHING_SENT, ...over };
}

export function input(
  opts: { std?: Partial<StandardVideoRequest>; native?: JsonObject; media?: Record<string, InlineMedia>; model?: string } = {},
): CreateInput {
  const model = opts.model ?? 'veo-3.1-generate-001';
  return {
    model,
    upstreamModel: model,
    std: std({ model, ...opts.std }),
    native: opts.native ?? {},
    media: new Map(Object.entries(opts.media ?? {})),
  };
}

export function upstream(options: JsonObject = {}, over: Partial<Upstream> = {}): Upstream {
  return {
    name: 'veo-main',
    vendor: 'veo',
    baseUrl: 'https://us-central1-aiplatform.googleapis.com',
    models: ['veo-3.1-generate-001'],
    priority: 1,
    weight: 1,
    timeoutMs: 30_000,
    // Translation tests use many buckets; the allow-list has tests of its own.
    options: { project: 'acme-video', location: 'us-central1', allowed_gcs_buckets: '*', ...options },
    ...over,
  };
}

export const PNG_B64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
export const JPG_B64 = '/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAEBAQ==';
