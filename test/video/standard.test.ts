import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { GatewayError } from '../../src/core/errors.js';
import { parseStandard } from '../../src/video/standard.js';

const base = { model: 'm', prompt: 'a fox' };
function err(body: Record<string, unknown>): GatewayError {
  try {
    parseStandard(body as never);
  } catch (e) {
    return e as GatewayError;
  }
  throw new Error('expected a 400');
}

describe('standard video fields', () => {
  it('splits standard and native fields without touching natives', () => {
    const { std, native } = parseStandard({ ...base, seconds: 8, foo: { a: 1 }, duration: 5, ratio: '16:9' });
    expect(std.seconds).toBe(8);
    expect(native).toEqual({ foo: { a: 1 }, duration: 5 });
    expect(std.aspectRatio).toBe('16:9');
  });

  it('requires model and prompt with param named', () => {
    expect(err({ prompt: 'x' })).toMatchObject({ status: 400, param: 'model' });
    expect(err({ model: 'm' })).toMatchObject({ status: 400, param: 'prompt' });
    expect(err({ model: 'm', prompt: 7 })).toMatchObject({ status: 400, param: 'prompt' });
    expect(err({ ...base, seconds: -1 })).toMatchObject({ status: 400, param: 'seconds' });
    expect(err({ ...base, seconds: 'ten' })).toMatchObject({ status: 400, param: 'seconds' });
    expect(err({ ...base, size: '1280-720' })).toMatchObject({ status: 400, param: 'size' });
    expect(err({ ...base, resolution: 'HD' })).toMatchObject({ status: 400, param: 'resolution' });
  });

  it('accepts size alone and derives resolution and aspect ratio', () => {
    const { std } = parseStandard({ ...base, size: '720x1280' });
    expect(std.size).toEqual({ width: 720, height: 1280 });
    expect(std.resolution).toBe(720);
    expect(std.aspectRatio).toBe('9:16');
  });

  it('accepts resolution + aspect_ratio alone and derives the size', () => {
    expect(parseStandard({ ...base, resolution: '720p', aspect_ratio: '16:9' }).std.size).toEqual({ width: 1280, height: 720 });
    expect(parseStandard({ ...base, resolution: '1080p', ratio: '9:16' }).std.size).toEqual({ width: 1080, height: 1920 });
  });

  it('accepts both forms when they agree, rejects them when they conflict', () => {
    expect(parseStandard({ ...base, size: '1280x720', resolution: '720p', aspect_ratio: '16:9' }).std.size).toEqual({ width: 1280, height: 720 });
    expect(err({ ...base, size: '1280x720', resolution: '1080p', aspect_ratio: '16:9' })).toMatchObject({ status: 400, code: 'size_conflict' });
    expect(err({ ...base, size: '1280x720', resolution: '720p', aspect_ratio: '9:16' })).toMatchObject({ status: 400, code: 'size_conflict', param: 'aspect_ratio' });
    expect(err({ ...base, aspect_ratio: '16:9', ratio: '1:1' })).toMatchObject({ status: 400, param: 'ratio' });
  });

  it('validates frame_images and input_references', () => {
    const { std } = parseStandard({
      ...base,
      frame_images: [{ image_url: 'https://x/a.png', frame_type: 'last_frame' }],
      input_references: [{ type: 'video', url: 'https://x/v.mp4', role: 'reference_video' }],
    });
    expect(std.frameImages).toEqual([{ url: 'https://x/a.png', frameType: 'last_frame' }]);
    expect(std.inputReferences).toEqual([{ type: 'video', url: 'https://x/v.mp4', role: 'reference_video' }]);
    expect(err({ ...base, frame_images: [{ image_url: 'ftp://x', frame_type: 'first_frame' }] })).toMatchObject({ param: 'frame_images[0].image_url' });
    expect(err({ ...base, frame_images: [{ image_url: 'https://x', frame_type: 'middle' }] })).toMatchObject({ param: 'frame_images[0].frame_type' });
    expect(err({ ...base, frame_images: 'x' })).toMatchObject({ param: 'frame_images' });
  });

  it('never throws anything but a 400 on arbitrary JSON bodies', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom('model', 'prompt', 'seconds', 'size', 'resolution', 'aspect_ratio', 'ratio', 'frame_images', 'input_references', 'x'), fc.jsonValue()), (body) => {
        try {
          parseStandard(body as never);
        } catch (e) {
          expect(e).toBeInstanceOf(GatewayError);
          expect((e as GatewayError).status).toBe(400);
        }
      }),
      { numRuns: 500 },
    );
  });
});
