import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../../src/core/json.js';
import { input, rejectParam, up, vendor } from '../../kit/wan.js';

describe('wan buildCreate', () => {
  it('text-to-video: size with an asterisk, duration, natives split between input and parameters', () => {
    const req = vendor.buildCreate(
      input(
        'wan2.6-t2v',
        { seconds: 10, size: { width: 1280, height: 720 }, resolution: 720, aspectRatio: '16:9', sent: { size: true, resolution: false, aspectRatio: false } },
        { negative_prompt: 'blurry', seed: 42, prompt_extend: false, watermark: true, shot_type: 'multi', audio_url: 'https://x/a.mp3', brand_new_knob: { a: 1 } },
      ),
      up,
    );
    expect(req.method).toBe('POST');
    expect(req.url).toBe('https://dashscope-intl.aliyuncs.com/api/v1/services/aigc/video-generation/video-synthesis');
    expect(req.headers).toEqual({
      authorization: 'Bearer sk-live-0123456789abcdef',
      'content-type': 'application/json',
      'x-dashscope-async': 'enable',
    });
    expect(req.body).toEqual({
      model: 'wan2.6-t2v',
      input: { prompt: 'a red fox runs through snow', negative_prompt: 'blurry', audio_url: 'https://x/a.mp3' },
      parameters: { size: '1280*720', duration: 10, seed: 42, prompt_extend: false, watermark: true, shot_type: 'multi', brand_new_knob: { a: 1 } },
    });
  });

  it('resolution + aspect_ratio become a pixel size; wan2.6 documents no `ratio`, so none is sent', () => {
    const req = vendor.buildCreate(
      input('wan2.6-t2v', { resolution: 1080, aspectRatio: '9:16', size: { width: 1080, height: 1920 }, sent: { size: false, resolution: true, aspectRatio: true } }),
      up,
    );
    expect((req.body as JsonObject).parameters).toEqual({ size: '1080*1920' });
  });

  it('an aspect ratio alone picks the documented 720P size for that ratio', () => {
    const req = vendor.buildCreate(input('wan2.6-t2v', { aspectRatio: '3:4', sent: { size: false, resolution: false, aspectRatio: true } }), up);
    expect((req.body as JsonObject).parameters).toEqual({ size: '832*1088' });
  });

  it('wan2.7 documents `ratio` beside the resolution tier: an aspect ratio travels there', () => {
    const req = vendor.buildCreate(
      input('wan2.7-t2v', { resolution: 1080, aspectRatio: '9:16', sent: { size: false, resolution: true, aspectRatio: true } }),
      up,
    );
    expect((req.body as JsonObject).parameters).toEqual({ resolution: '1080P', ratio: '9:16' });
  });

  it('classic image-to-video: first frame as img_url and a resolution tier instead of size', () => {
    const req = vendor.buildCreate(
      input('wan2.2-i2v-plus', {
        size: { width: 1920, height: 1080 },
        resolution: 1080,
        aspectRatio: '16:9',
        sent: { size: true, resolution: false, aspectRatio: false },
        frameImages: [{ url: 'https://img/first.png', frameType: 'first_frame' }],
      }),
      up,
    );
    expect(req.url.endsWith('/api/v1/services/aigc/video-generation/video-synthesis')).toBe(true);
    expect(req.body).toEqual({
      model: 'wan2.2-i2v-plus',
      input: { prompt: 'a red fox runs through snow', img_url: 'https://img/first.png' },
      parameters: { resolution: '1080P' },
    });
  });

  it('first+last frame (kf2v) models use their own path and frame URL fields', () => {
    const req = vendor.buildCreate(
      input('wan2.2-kf2v-flash', {
        resolution: 480,
        seconds: 5,
        sent: { size: false, resolution: true, aspectRatio: false },
        frameImages: [
          { url: 'https://img/a.png', frameType: 'first_frame' },
          { url: 'https://img/b.png', frameType: 'last_frame' },
        ],
      }),
      up,
    );
    expect(req.url).toBe('https://dashscope-intl.aliyuncs.com/api/v1/services/aigc/image2video/video-synthesis');
    expect(req.body).toEqual({
      model: 'wan2.2-kf2v-flash',
      input: { prompt: 'a red fox runs through snow', first_frame_url: 'https://img/a.png', last_frame_url: 'https://img/b.png' },
      parameters: { resolution: '480P', duration: 5 },
    });
  });

  it('wan2.7: frames become media items and a native media[] is appended, not replacing them', () => {
    const req = vendor.buildCreate(
      input(
        'wan2.7-i2v',
        {
          size: { width: 1280, height: 720 },
          resolution: 720,
          aspectRatio: '16:9',
          sent: { size: true, resolution: false, aspectRatio: false },
          frameImages: [
            { url: 'https://img/a.png', frameType: 'first_frame' },
            { url: 'https://img/b.png', frameType: 'last_frame' },
          ],
        },
        { media: [{ type: 'driving_audio', url: 'https://aud/x.mp3' }], input: { media: [{ type: 'first_clip', url: 'https://v/c.mp4' }] } },
      ),
      up,
    );
    expect(req.body).toEqual({
      model: 'wan2.7-i2v',
      input: {
        prompt: 'a red fox runs through snow',
        media: [
          { type: 'first_frame', url: 'https://img/a.png' },
          { type: 'last_frame', url: 'https://img/b.png' },
          { type: 'first_clip', url: 'https://v/c.mp4' },
          { type: 'driving_audio', url: 'https://aud/x.mp3' },
        ],
      },
      parameters: { resolution: '720P', ratio: '16:9' },
    });
  });

  it('native input/parameters objects merge recursively and native duration wins over seconds', () => {
    const req = vendor.buildCreate(
      input(
        'wan2.6-t2v',
        { seconds: 5, size: { width: 832, height: 480 }, sent: { size: true, resolution: false, aspectRatio: false } },
        { duration: 15, parameters: { size: '1920*1080', extra: { deep: true } }, input: { negative_prompt: 'x' }, template: 'flying' },
      ),
      up,
    );
    expect(req.body).toEqual({
      model: 'wan2.6-t2v',
      input: { prompt: 'a red fox runs through snow', negative_prompt: 'x', template: 'flying' },
      parameters: { size: '1920*1080', duration: 15, extra: { deep: true } },
    });
  });

  it('media-like names ending in _url/_urls go to input even when the gateway has never seen them', () => {
    const body = vendor.buildCreate(input('wan2.6-t2v', {}, { style_ref_url: 'https://s', clip_urls: ['https://c'], mood: 'calm' }), up).body as JsonObject;
    expect(body.input).toEqual({ prompt: 'a red fox runs through snow', style_ref_url: 'https://s', clip_urls: ['https://c'] });
    expect(body.parameters).toEqual({ mood: 'calm' });
  });

  it('references go where the model takes them and are silently ignored elsewhere', () => {
    const refs = [
      { type: 'image', url: 'https://r/1.png', role: 'reference_image' },
      { type: 'video', url: 'https://r/2.mp4', role: 'reference_video' },
      { type: 'audio', url: 'https://r/3.mp3' },
    ];
    const classic = vendor.buildCreate(input('wan2.6-r2v', { inputReferences: refs }), up).body as JsonObject;
    expect((classic.input as JsonObject).reference_urls).toEqual(['https://r/1.png', 'https://r/2.mp4']);
    const media = vendor.buildCreate(input('wan2.7-r2v', { inputReferences: refs }), up).body as JsonObject;
    expect((media.input as JsonObject).media).toEqual([
      { type: 'reference_image', url: 'https://r/1.png' },
      { type: 'reference_video', url: 'https://r/2.mp4' },
    ]);
    const t2v = vendor.buildCreate(input('wan2.6-t2v', { inputReferences: refs }), up).body as JsonObject;
    expect(t2v.input).toEqual({ prompt: 'a red fox runs through snow' });
  });

  it('adds the OSS-resolve header for oss:// inputs and the workspace header when configured', () => {
    const req = vendor.buildCreate(
      input('wan2.6-i2v', { frameImages: [{ url: 'oss://dashscope-instant/abc.png', frameType: 'first_frame' }] }),
      { ...up, options: { workspace: 'ws-123' } },
    );
    expect(req.headers['x-dashscope-ossresourceresolve']).toBe('enable');
    expect(req.headers['x-dashscope-workspace']).toBe('ws-123');
    const plain = vendor.buildCreate(input('wan2.6-i2v', { frameImages: [{ url: 'https://x.png', frameType: 'first_frame' }] }), up);
    expect(plain.headers['x-dashscope-ossresourceresolve']).toBeUndefined();
  });
});

describe('wan validate and estimate', () => {
  it('rejects frames the model cannot take, with param frame_images', () => {
    const first = [{ url: 'https://x.png', frameType: 'first_frame' as const }];
    const last = [{ url: 'https://y.png', frameType: 'last_frame' as const }];
    expect(rejectParam(() => vendor.validate!(input('wan2.6-t2v', { frameImages: first })))).toBe('frame_images');
    expect(rejectParam(() => vendor.validate!(input('wan2.6-i2v', { frameImages: [...first, ...last] })))).toBe('frame_images');
    expect(rejectParam(() => vendor.validate!(input('wan2.2-kf2v-flash', { frameImages: [...first, ...first] })))).toBe('frame_images');
    expect(() => vendor.validate!(input('wan2.2-kf2v-flash', { frameImages: [...first, ...last] }))).not.toThrow();
    expect(() => vendor.validate!(input('wan2.7-i2v', { frameImages: [...first, ...last] }))).not.toThrow();
  });

  it('rejects fractional seconds and malformed media/input/parameters', () => {
    expect(rejectParam(() => vendor.validate!(input('wan2.6-t2v', { seconds: 4.5 })))).toBe('seconds');
    expect(rejectParam(() => vendor.validate!(input('wan2.7-i2v', {}, { media: { type: 'first_frame' } })))).toBe('media');
    expect(rejectParam(() => vendor.validate!(input('wan2.6-t2v', {}, { parameters: 'x' })))).toBe('parameters');
    expect(rejectParam(() => vendor.validate!(input('wan2.6-t2v', {}, { input: [1] })))).toBe('input');
  });

  it('holds the native duration when present, else seconds, else the 5 s default', () => {
    expect(vendor.estimateSeconds(input('wan2.6-t2v', { seconds: 5 }, { duration: 12 }))).toBe(12);
    expect(vendor.estimateSeconds(input('wan2.6-t2v', { seconds: 5 }, { duration: '8' }))).toBe(8);
    expect(vendor.estimateSeconds(input('wan2.6-t2v', {}, { parameters: { duration: 15 } }))).toBe(15);
    expect(vendor.estimateSeconds(input('wan2.6-t2v', { seconds: 10 }))).toBe(10);
    expect(vendor.estimateSeconds(input('wan2.6-t2v'))).toBe(5);
  });
});

