import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../../src/core/json.js';
import { GatewayError } from '../../../src/core/errors.js';
import type { Upstream, UpstreamRequest } from '../../../src/http/types.js';
import type { CreateInput } from '../../../src/video/types.js';
import { falVendor as fal } from '../../../src/video/vendors/fal/adapter.js';
import { falInput, falUpstream } from '../../kit/fal.js';

const BASE = 'https://queue.fal.run';
const upstream = (options: JsonObject = {}, apiKey: string | null = 'k-123'): Upstream => falUpstream(BASE, options, apiKey);
const input = falInput;

const body = (r: UpstreamRequest): JsonObject => r.body as JsonObject;

describe('fal create: path, headers and duration per family', () => {
  it('veo3: submits on the full model path with Key auth and "Ns" durations', () => {
    const req = fal.buildCreate(input('fal-ai/veo3/fast', { seconds: 6, aspectRatio: '9:16', resolution: 1080 }), upstream());
    expect(req.method).toBe('POST');
    expect(req.url).toBe(`${BASE}/fal-ai/veo3/fast`);
    expect(req.headers['authorization']).toBe('Key k-123');
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.body).toEqual({ prompt: 'a red fox in the snow', duration: '6s', aspect_ratio: '9:16', resolution: '1080p' });
  });

  it('kling v1/v2: "5"/"10" strings, image_url + tail_image_url, no resolution field', () => {
    const req = fal.buildCreate(
      input('fal-ai/kling-video/v2.1/standard/image-to-video', {
        seconds: 10,
        resolution: 720,
        aspectRatio: '16:9',
        frameImages: [
          { url: 'https://img.example/first.png', frameType: 'first_frame' },
          { url: 'https://img.example/last.png', frameType: 'last_frame' },
        ],
      }),
      upstream(),
    );
    expect(req.body).toEqual({
      prompt: 'a red fox in the snow',
      duration: '10',
      aspect_ratio: '16:9',
      image_url: 'https://img.example/first.png',
      tail_image_url: 'https://img.example/last.png',
    });
  });

  it('kling o3 and v3: "3".."15" strings with start/end image fields', () => {
    const o3 = fal.buildCreate(
      input('fal-ai/kling-video/o3/pro/image-to-video', { seconds: 12, frameImages: [{ url: 'u1', frameType: 'first_frame' }] }),
      upstream(),
    );
    expect(body(o3)['duration']).toBe('12');
    expect(body(o3)['start_image_url']).toBe('u1');
    const v3 = fal.buildCreate(input('fal-ai/kling-video/v3/pro/text-to-video', { seconds: 3 }), upstream());
    expect(body(v3)['duration']).toBe('3');
  });

  it('kling v4: an integer duration', () => {
    const req = fal.buildCreate(input('fal-ai/kling-video/v4/pro/text-to-video', { seconds: 20, resolution: 1080 }), upstream());
    expect(body(req)['duration']).toBe(20);
    expect(body(req)['resolution']).toBe('1080p');
  });

  it('other models: the seconds as a string', () => {
    const req = fal.buildCreate(input('fal-ai/minimax/hailuo-02/standard/text-to-video', { seconds: 6 }), upstream());
    expect(body(req)['duration']).toBe('6');
  });

  it('veo3.1 first/last-frame endpoints take first_frame_url/last_frame_url; 2160p is spelled 4k', () => {
    const req = fal.buildCreate(
      input('fal-ai/veo3.1/fast/first-last-frame-to-video', {
        resolution: 2160,
        frameImages: [
          { url: 'f.png', frameType: 'first_frame' },
          { url: 'l.png', frameType: 'last_frame' },
        ],
      }),
      upstream(),
    );
    expect(body(req)).toEqual({ prompt: 'a red fox in the snow', resolution: '4k', first_frame_url: 'f.png', last_frame_url: 'l.png' });
  });

  it('sends no duration when none is asked for (the model default applies)', () => {
    const req = fal.buildCreate(input('fal-ai/veo3'), upstream());
    expect(body(req)).toEqual({ prompt: 'a red fox in the snow' });
  });

  it('an operator table (duration_formats) overrides the spelling for a model prefix', () => {
    const up = upstream({ duration_formats: { 'fal-ai/sora-2': 'integer', 'fal-ai/sora-2/text-to-video': 'suffix_s' } });
    expect(body(fal.buildCreate(input('fal-ai/sora-2/text-to-video', { seconds: 8 }), up))['duration']).toBe('8s');
    expect(body(fal.buildCreate(input('fal-ai/sora-2/image-to-video', { seconds: 8 }), up))['duration']).toBe(8);
  });
});

describe('fal create: native fields', () => {
  it('native duration wins: converted to the family spelling, or kept when already in it', () => {
    const cases: [string, unknown, unknown][] = [
      ['fal-ai/veo3/fast', 8, '8s'],
      ['fal-ai/veo3/fast', '8', '8s'],
      ['fal-ai/veo3/fast', '6s', '6s'],
      ['fal-ai/kling-video/v2.1/pro/text-to-video', 10, '10'],
      ['fal-ai/kling-video/v2.1/pro/text-to-video', '5s', '5'],
      ['fal-ai/kling-video/v4/pro/text-to-video', '7', 7],
      ['fal-ai/kling-video/v4/pro/text-to-video', 9, 9],
      ['fal-ai/veo3/fast', 'auto', 'auto'],
    ];
    for (const [model, given, sent] of cases) {
      const req = fal.buildCreate(input(model, { seconds: 4 }, { duration: given as never }), upstream());
      expect(body(req)['duration'], `${model} ${String(given)}`).toEqual(sent);
    }
  });

  it('unknown fields pass through unchanged, nested objects included; native names beat derived ones', () => {
    const req = fal.buildCreate(
      input(
        'fal-ai/kling-video/v2.1/pro/image-to-video',
        { frameImages: [{ url: 'derived.png', frameType: 'first_frame' }] },
        { image_url: 'native.png', cfg_scale: 0.7, brand_new_param: { depth: { x: [1, 2] } }, seed: 7, negative_prompt: 'blur' },
      ),
      upstream(),
    );
    expect(req.body).toEqual({
      prompt: 'a red fox in the snow',
      image_url: 'native.png',
      cfg_scale: 0.7,
      brand_new_param: { depth: { x: [1, 2] } },
      seed: 7,
      negative_prompt: 'blur',
    });
  });

  it('webhook_url becomes the fal_webhook query parameter, not a model input', () => {
    const req = fal.buildCreate(input('fal-ai/veo3', {}, { webhook_url: 'https://hooks.example/fal?x=1' }), upstream());
    expect(req.url).toBe(`${BASE}/fal-ai/veo3?fal_webhook=${encodeURIComponent('https://hooks.example/fal?x=1')}`);
    expect(body(req)).not.toHaveProperty('webhook_url');
  });

  it('reference images go to image_urls on reference-to-video endpoints and are ignored elsewhere', () => {
    const refs = [
      { type: 'image', url: 'r1.png', role: 'reference_image' },
      { type: 'video', url: 'v.mp4', role: 'reference_video' },
      { type: 'image', url: 'r2.png' },
    ];
    const r2v = fal.buildCreate(input('fal-ai/veo3.1/reference-to-video', { inputReferences: refs }), upstream());
    expect(body(r2v)['image_urls']).toEqual(['r1.png', 'r2.png']);
    const t2v = fal.buildCreate(input('fal-ai/veo3.1', { inputReferences: refs }), upstream());
    expect(body(t2v)).toEqual({ prompt: 'a red fox in the snow' });
  });

  it('options add the object lifecycle and no-retry headers; no key means no authorization header', () => {
    const req = fal.buildCreate(input('fal-ai/veo3'), upstream({ object_lifecycle_seconds: 3600, no_retry: true }, null));
    expect(req.headers['x-fal-object-lifecycle-preference']).toBe('{"expiration_duration_seconds":3600}');
    expect(req.headers['x-fal-no-retry']).toBe('1');
    expect(req.headers).not.toHaveProperty('authorization');
  });
});

describe('fal validate and estimate', () => {
  const rejects = (i: CreateInput, param: string): void => {
    let caught: unknown;
    try {
      fal.validate!(i);
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(GatewayError);
    expect((caught as GatewayError).status).toBe(400);
    expect((caught as GatewayError).param).toBe(param);
  };

  it('rejects seconds the family does not offer, and accepts those it does', () => {
    rejects(input('fal-ai/veo3/fast', { seconds: 5 }), 'seconds');
    rejects(input('fal-ai/kling-video/v2.1/standard/text-to-video', { seconds: 7 }), 'seconds');
    rejects(input('fal-ai/kling-video/o3/pro/text-to-video', { seconds: 16 }), 'seconds');
    rejects(input('fal-ai/kling-video/v4/pro/text-to-video', { seconds: 31 }), 'seconds');
    expect(() => fal.validate!(input('fal-ai/veo3/fast', { seconds: 4 }))).not.toThrow();
    expect(() => fal.validate!(input('fal-ai/kling-video/o3/pro/text-to-video', { seconds: 15 }))).not.toThrow();
    expect(() => fal.validate!(input('fal-ai/wan-25-preview/text-to-video', { seconds: 7 }))).not.toThrow();
  });

  it('rejects a webhook_url that is not an http(s) URL', () => {
    rejects(input('fal-ai/veo3', {}, { webhook_url: 'ftp://x' }), 'webhook_url');
    rejects(input('fal-ai/veo3', {}, { webhook_url: 5 }), 'webhook_url');
  });

  it('holds the native duration, else seconds, else the family default', () => {
    expect(fal.estimateSeconds(input('fal-ai/veo3/fast', { seconds: 4 }, { duration: '6s' }))).toBe(6);
    expect(fal.estimateSeconds(input('fal-ai/kling-video/v2.1/pro/text-to-video', { seconds: 10 }))).toBe(10);
    expect(fal.estimateSeconds(input('fal-ai/veo3/fast'))).toBe(8);
    expect(fal.estimateSeconds(input('fal-ai/kling-video/o3/pro/text-to-video'))).toBe(5);
    // Sized in frames: frames over the frame rate, under any of the names models use (billing never goes above the hold).
    expect(fal.estimateSeconds(input('fal-ai/ltx-video', {}, { num_frames: 241, frame_rate: 24 }))).toBe(10.042);
    expect(fal.estimateSeconds(input('fal-ai/wan-t2v', {}, { num_frames: 81, frames_per_second: 16 }))).toBe(5.063);
    expect(fal.estimateSeconds(input('fal-ai/some-model', {}, { num_frames: 120, fps: 30 }))).toBe(4);
    // A frame count without a rate says nothing about seconds: the usual fallbacks.
    expect(fal.estimateSeconds(input('fal-ai/some-model', { seconds: 6 }, { num_frames: 120 }))).toBe(6);
  });

  it('holds every video a request asks for: n or num_videos, the larger when both are sent', () => {
    const kling = 'fal-ai/kling-video/v2.1/pro/text-to-video';
    expect(fal.estimateSeconds(input(kling, { seconds: 10 }, { num_videos: 3 }))).toBe(30);
    expect(fal.estimateSeconds(input(kling, { seconds: 5 }, { n: 2 }))).toBe(10);
    expect(fal.estimateSeconds(input(kling, { seconds: 5 }, { n: 2, num_videos: 4 }))).toBe(20);
    // A count the model would coerce ("3") counts; a fraction is held at the next whole video.
    expect(fal.estimateSeconds(input('fal-ai/veo3/fast', {}, { num_videos: '3' }))).toBe(24);
    expect(fal.estimateSeconds(input('fal-ai/some-model', { seconds: 4 }, { num_videos: 2.5 }))).toBe(12);
    expect(fal.estimateSeconds(input('fal-ai/ltx-video', {}, { num_frames: 240, fps: 24, num_videos: 2 }))).toBe(20);
    // Nothing that can be a count (0, negative, not a number) holds one video: the model judges it.
    for (const n of [0, -2, 'many', null, true]) expect(fal.estimateSeconds(input(kling, { seconds: 5 }, { num_videos: n }))).toBe(5);
  });

  it('a count past any balance holds an amount no balance covers, not a broken figure', () => {
    expect(fal.estimateSeconds(input('fal-ai/some-model', { seconds: 5 }, { num_videos: 1e300 }))).toBe(5e300);
  });

  it('owns fal names but never a standard or cross-vendor-common one', () => {
    // enhance_prompt is also Veo's: fal's Veo models take it, so fal claims it too.
    for (const name of ['image_url', 'tail_image_url', 'end_image_url', 'cfg_scale', 'multi_prompt', 'webhook_url', 'sync_mode', 'enhance_prompt']) {
      expect(fal.ownedParams.has(name), name).toBe(true);
    }
    const common = ['model', 'prompt', 'seconds', 'size', 'resolution', 'aspect_ratio', 'ratio', 'duration', 'seed', 'negative_prompt', 'fps', 'n', 'user'];
    // video_url is accepted unclaimed by wan; claiming it would make wan models refuse it.
    for (const name of [...common, 'frame_images', 'input_references', 'video_url']) {
      expect(fal.ownedParams.has(name), name).toBe(false);
    }
  });
});

