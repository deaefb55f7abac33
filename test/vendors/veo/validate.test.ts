import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../src/core/errors.js';
import { veoVendor as veo } from '../../../src/video/vendors/veo/adapter.js';
import type { JsonObject } from '../../../src/core/json.js';
import { input, upstream } from '../../kit/veo.js';

function catch400(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(GatewayError);
    expect((e as GatewayError).status).toBe(400);
    return e as GatewayError;
  }
  throw new Error('expected a 400');
}

describe('veo validate', () => {
  it('sampleCount must be an integer from 1 to 4, reported under the name the client used', () => {
    for (const v of [0, 5, 2.5, 'many']) expect(catch400(() => veo.validate!(input({ native: { sampleCount: v } }))).param).toBe('sampleCount');
    expect(catch400(() => veo.validate!(input({ native: { sample_count: 7 } }))).param).toBe('sample_count');
    expect(catch400(() => veo.validate!(input({ native: { n: 9 } }))).param).toBe('n');
    expect(catch400(() => veo.validate!(input({ native: { parameters: { sampleCount: 6 } } }))).param).toBe('parameters.sampleCount');
    for (const v of [1, 4, '3']) expect(() => veo.validate!(input({ native: { sampleCount: v } }))).not.toThrow();
  });

  it('durations are whole seconds', () => {
    expect(catch400(() => veo.validate!(input({ std: { seconds: 5.5 } }))).param).toBe('seconds');
    expect(catch400(() => veo.validate!(input({ native: { durationSeconds: 'long' } }))).param).toBe('durationSeconds');
    expect(catch400(() => veo.validate!(input({ native: { duration: -4 } }))).param).toBe('duration');
    // The native value wins, so a fractional standard value it overrides does not matter.
    expect(() => veo.validate!(input({ std: { seconds: 5.5 }, native: { durationSeconds: 6 } }))).not.toThrow();
  });

  it('media and structure errors name the parameter', () => {
    expect(catch400(() => veo.validate!(input({ native: { last_frame: 'ftp://x/y.png', image: 'gs://a/b.png' } }))).param).toBe('last_frame');
    expect(catch400(() => veo.validate!(input({ native: { last_frame: 'gs://a/z.png' } }))).param).toBe('last_frame');
    expect(
      catch400(() => veo.validate!(input({ std: { frameImages: [{ url: 'gs://a/z.png', frameType: 'last_frame' }] } }))).param,
    ).toBe('frame_images');
    expect(
      catch400(() =>
        veo.validate!(input({ std: { frameImages: [{ url: 'gs://a/1.png', frameType: 'first_frame' }, { url: 'gs://a/2.png', frameType: 'first_frame' }] } })),
      ).param,
    ).toBe('frame_images');
    expect(catch400(() => veo.validate!(input({ native: { mask_mode: 'remove' } }))).param).toBe('mask_mode');
    expect(catch400(() => veo.validate!(input({ native: { reference_images: 'gs://a/b.png' } }))).param).toBe('reference_images');
    expect(catch400(() => veo.validate!(input({ native: { reference_images: [42] } }))).param).toBe('reference_images[0]');
    expect(catch400(() => veo.validate!(input({ native: { parameters: [1] } }))).param).toBe('parameters');
    expect(catch400(() => veo.validate!(input({ native: { instances: {} } }))).param).toBe('instances');
  });

  it('validates without fetched media (the URLs are fetched after validation)', () => {
    expect(() => veo.validate!(input({ native: { mask: 'https://img.example/m.png', mask_mode: 'remove', input_video: 'gs://v/a.mp4' } }))).not.toThrow();
  });
});

describe('veo estimateSeconds and ownership', () => {
  it('holds the native duration, else seconds, else 8, times the number of videos', () => {
    expect(veo.estimateSeconds(input())).toBe(8);
    expect(veo.estimateSeconds(input({ std: { seconds: 6 } }))).toBe(6);
    expect(veo.estimateSeconds(input({ std: { seconds: 6 }, native: { durationSeconds: 4 } }))).toBe(4);
    expect(veo.estimateSeconds(input({ native: { duration: '6', sample_count: 3 } }))).toBe(18);
    expect(veo.estimateSeconds(input({ native: { parameters: { sampleCount: 4 } } }))).toBe(32);
  });

  it("the Gen AI SDK's number of videos (numberOfVideos, number_of_videos) is sampleCount: held, checked and sent as such", () => {
    expect(veo.estimateSeconds(input({ native: { numberOfVideos: 3 } }))).toBe(24);
    expect(veo.estimateSeconds(input({ std: { seconds: 4 }, native: { number_of_videos: 2 } }))).toBe(8);
    const sent = veo.buildCreate(input({ native: { numberOfVideos: 3 } }), upstream()).body as JsonObject;
    expect(sent['parameters']).toMatchObject({ sampleCount: 3 });
    expect(sent['parameters']).not.toHaveProperty('numberOfVideos');
    expect(() => veo.validate!(input({ native: { numberOfVideos: 9 } }))).toThrow(/sampleCount must be an integer from 1 to 4/);
    // The wire name still wins over an alias.
    expect(veo.estimateSeconds(input({ native: { numberOfVideos: 3, sampleCount: 1 } }))).toBe(8);
  });

  it('owns its camelCase and spec-listed names, never the cross-vendor common ones', () => {
    for (const p of ['sampleCount', 'personGeneration', 'enhancePrompt', 'compressionQuality', 'resizeMode', 'storageUri', 'generateAudio', 'durationSeconds', 'aspectRatio', 'last_frame', 'input_video', 'mask', 'mask_mode', 'reference_images'])
      expect(veo.ownedParams.has(p), p).toBe(true);
    for (const p of ['duration', 'seed', 'size', 'resolution', 'negative_prompt', 'fps', 'n', 'user', 'seconds', 'prompt'])
      expect(veo.ownedParams.has(p), p).toBe(false);
  });
});
