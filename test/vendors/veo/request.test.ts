import { describe, expect, it } from 'vitest';
import type { JsonObject } from '../../../src/core/json.js';
import { veoVendor as veo } from '../../../src/video/vendors/veo/adapter.js';
import { input, JPG_B64, PNG_B64, upstream } from '../../kit/veo.js';

const CREATE_URL =
  'https://us-central1-aiplatform.googleapis.com/v1/projects/acme-video/locations/us-central1/publishers/google/models/veo-3.1-generate-001:predictLongRunning';

function body(i = input(), up = upstream()): JsonObject {
  return veo.buildCreate(i, up).body as JsonObject;
}

describe('veo buildCreate: standard fields', () => {
  it('text-to-video: path on the configured project and location, prompt in instances, size in parameters', () => {
    const i = input({ std: { seconds: 6, size: { width: 1280, height: 720 }, resolution: 720, aspectRatio: '16:9', sent: { size: true, resolution: false, aspectRatio: false } } });
    const req = veo.buildCreate(i, upstream());
    expect(req.method).toBe('POST');
    expect(req.url).toBe(CREATE_URL);
    expect(req.headers).toEqual({ 'content-type': 'application/json; charset=utf-8' });
    expect(req.body).toEqual({
      instances: [{ prompt: 'a red fox running through snow' }],
      parameters: { durationSeconds: 6, aspectRatio: '16:9', resolution: '720p', generateAudio: true },
    });
  });

  it('portrait sizes use the short side for the resolution label, 2160 is "4k"', () => {
    const portrait = input({ std: { size: { width: 720, height: 1280 }, resolution: 1280, aspectRatio: '9:16', sent: { size: true, resolution: false, aspectRatio: false } } });
    expect(body(portrait)['parameters']).toMatchObject({ aspectRatio: '9:16', resolution: '720p' });
    const uhd = input({ std: { size: { width: 3840, height: 2160 }, resolution: 2160, aspectRatio: '16:9', sent: { size: true, resolution: false, aspectRatio: false } } });
    expect(body(uhd)['parameters']).toMatchObject({ resolution: '4k' });
    const sentRes = input({ std: { resolution: 1080, aspectRatio: '16:9', sent: { size: false, resolution: true, aspectRatio: true } } });
    expect(body(sentRes)['parameters']).toMatchObject({ resolution: '1080p', aspectRatio: '16:9' });
  });

  it('veo-2 gets neither generateAudio nor its only resolution, and a different model path', () => {
    const i = input({ model: 'veo-2.0-generate-001', std: { seconds: 5, size: { width: 1280, height: 720 }, resolution: 720, aspectRatio: '16:9', sent: { size: true, resolution: false, aspectRatio: false } } });
    const req = veo.buildCreate(i, upstream());
    expect(req.url).toContain('/models/veo-2.0-generate-001:predictLongRunning');
    expect((req.body as JsonObject)['parameters']).toEqual({ durationSeconds: 5, aspectRatio: '16:9' });
  });

  it('a word aspect ratio (adaptive/auto) is left to the model default', () => {
    const i = input({ std: { aspectRatio: 'adaptive', sent: { size: false, resolution: false, aspectRatio: true } } });
    expect(body(i)['parameters']).toEqual({ generateAudio: true });
  });

  it('first and last frames by URL become base64 media from the fetched bytes; gs:// passes as is', () => {
    const i = input({
      std: {
        frameImages: [
          { url: 'https://img.example/first.png', frameType: 'first_frame' },
          { url: 'gs://frames/last.jpg', frameType: 'last_frame' },
        ],
      },
      media: { 'https://img.example/first.png': { base64: PNG_B64, mimeType: 'image/png' } },
    });
    expect(veo.inlineMedia!(i)).toEqual(['https://img.example/first.png']);
    expect(body(i)['instances']).toEqual([
      {
        prompt: 'a red fox running through snow',
        image: { bytesBase64Encoded: PNG_B64, mimeType: 'image/png' },
        lastFrame: { gcsUri: 'gs://frames/last.jpg', mimeType: 'image/jpeg' },
      },
    ]);
  });

  it('image input_references become asset/style referenceImages; video references are ignored', () => {
    const i = input({
      std: {
        inputReferences: [
          { type: 'image', url: 'https://img.example/char.jpg', role: 'reference_image' },
          { type: 'image', url: 'gs://refs/look.png', role: 'style' },
          { type: 'video', url: 'https://v.example/clip.mp4', role: 'reference_video' },
        ],
      },
      media: { 'https://img.example/char.jpg': { base64: JPG_B64, mimeType: 'image/jpeg' } },
    });
    expect(veo.inlineMedia!(i)).toEqual(['https://img.example/char.jpg']);
    expect((body(i)['instances'] as JsonObject[])[0]!['referenceImages']).toEqual([
      { image: { bytesBase64Encoded: JPG_B64, mimeType: 'image/jpeg' }, referenceType: 'asset' },
      { image: { gcsUri: 'gs://refs/look.png', mimeType: 'image/png' }, referenceType: 'style' },
    ]);
  });

  it('input_references are dropped (and not fetched) when frames pin the video', () => {
    const i = input({
      std: {
        frameImages: [{ url: 'gs://frames/first.png', frameType: 'first_frame' }],
        inputReferences: [{ type: 'image', url: 'https://img.example/char.jpg' }],
      },
    });
    expect(veo.inlineMedia!(i)).toEqual([]);
    expect((body(i)['instances'] as JsonObject[])[0]!['referenceImages']).toBeUndefined();
  });
});

describe('veo buildCreate: natives', () => {
  it('places the spec natives in parameters, converting snake_case aliases; unknown names pass unchanged', () => {
    const i = input({
      std: { seconds: 4 },
      native: {
        sample_count: 2,
        person_generation: 'dont_allow',
        enhance_prompt: false,
        compression_quality: 'lossless',
        resize_mode: 'crop',
        storage_uri: 'gs://out/prefix/',
        generate_audio: false,
        negative_prompt: 'blur',
        seed: 42,
        fps: 24,
        futureKnob: { level: 3 },
        some_new_flag: true,
      },
    });
    expect(body(i)['parameters']).toEqual({
      durationSeconds: 4,
      generateAudio: false,
      sampleCount: 2,
      personGeneration: 'dont_allow',
      enhancePrompt: false,
      compressionQuality: 'lossless',
      resizeMode: 'crop',
      storageUri: 'gs://out/prefix/',
      negativePrompt: 'blur',
      seed: 42,
      fps: 24,
      futureKnob: { level: 3 },
      some_new_flag: true,
    });
  });

  it('native names win: durationSeconds over seconds, camelCase over snake_case, specific over generic', () => {
    const a = input({ std: { seconds: 4 }, native: { durationSeconds: 8, duration_seconds: 6, duration: 4 } });
    expect(body(a)['parameters']).toMatchObject({ durationSeconds: 8 });
    const b = input({ std: { seconds: 4 }, native: { duration: 6, duration_seconds: 8 } });
    expect(body(b)['parameters']).toMatchObject({ durationSeconds: 8 });
    const c = input({ native: { n: 2, sample_count: 3, sampleCount: 4 } });
    expect(body(c)['parameters']).toMatchObject({ sampleCount: 4 });
    const d = input({ native: { n: 2, negative_prompt: 'x', negativePrompt: 'y' } });
    expect(body(d)['parameters']).toMatchObject({ sampleCount: 2, negativePrompt: 'y' });
    const e = input({ native: { aspectRatio: '9:16' }, std: { aspectRatio: '16:9', sent: { size: false, resolution: false, aspectRatio: true } } });
    expect(body(e)['parameters']).toMatchObject({ aspectRatio: '9:16' });
  });

  it('a native nested parameters object merges recursively and is applied last', () => {
    const i = input({
      std: { seconds: 4 },
      native: { outputOptions: { mimeType: 'video/mp4', quality: 70 }, parameters: { durationSeconds: 6, outputOptions: { quality: 90 } } },
    });
    expect(body(i)['parameters']).toEqual({
      durationSeconds: 6,
      generateAudio: true,
      outputOptions: { mimeType: 'video/mp4', quality: 90 },
    });
  });

  it('places the instance-level natives in instances[0]', () => {
    const i = input({
      std: { frameImages: [{ url: 'https://img.example/a.png', frameType: 'first_frame' }] },
      native: {
        last_frame: 'https://img.example/z.jpg',
        mask: { gcs_uri: 'gs://masks/m.png' },
        mask_mode: 'insert',
        camera_control: 'pan_left',
      },
      media: {
        'https://img.example/a.png': { base64: PNG_B64, mimeType: 'image/png' },
        'https://img.example/z.jpg': { base64: JPG_B64, mimeType: 'image/jpeg' },
      },
    });
    expect(new Set(veo.inlineMedia!(i))).toEqual(new Set(['https://img.example/a.png', 'https://img.example/z.jpg']));
    const b = body(i);
    expect(b['instances']).toEqual([
      {
        prompt: 'a red fox running through snow',
        image: { bytesBase64Encoded: PNG_B64, mimeType: 'image/png' },
        lastFrame: { bytesBase64Encoded: JPG_B64, mimeType: 'image/jpeg' },
        mask: { gcsUri: 'gs://masks/m.png', mimeType: 'image/png', maskMode: 'insert' },
        cameraControl: 'pan_left',
      },
    ]);
    expect(b['parameters']).toEqual({ generateAudio: true });
  });

  it('input_video becomes instances[0].video; reference_images accept strings and {image, reference_type}', () => {
    const i = input({
      native: {
        input_video: 'gs://clips/base.mp4',
        reference_images: [
          'https://img.example/r1.png',
          { image: { gcsUri: 'gs://refs/r2.jpg' }, reference_type: 'style' },
          { url: 'data:image/png;base64,' + PNG_B64 },
        ],
      },
      media: { 'https://img.example/r1.png': { base64: PNG_B64, mimeType: 'image/png' } },
    });
    expect(veo.inlineMedia!(i)).toEqual(['https://img.example/r1.png']);
    expect((body(i)['instances'] as JsonObject[])[0]).toEqual({
      prompt: 'a red fox running through snow',
      video: { gcsUri: 'gs://clips/base.mp4', mimeType: 'video/mp4' },
      referenceImages: [
        { image: { bytesBase64Encoded: PNG_B64, mimeType: 'image/png' }, referenceType: 'asset' },
        { image: { gcsUri: 'gs://refs/r2.jpg', mimeType: 'image/jpeg' }, referenceType: 'style' },
        { image: { bytesBase64Encoded: PNG_B64, mimeType: 'image/png' }, referenceType: 'asset' },
      ],
    });
  });

  it('a native media value replaces the derived one whole (bytes and gcsUri are a union)', () => {
    const i = input({
      std: { frameImages: [{ url: 'https://img.example/a.png', frameType: 'first_frame' }] },
      native: { image: { gcsUri: 'gs://f/first.png', mimeType: 'image/png' } },
      media: { 'https://img.example/a.png': { base64: PNG_B64, mimeType: 'image/png' } },
    });
    expect((body(i)['instances'] as JsonObject[])[0]!['image']).toEqual({ gcsUri: 'gs://f/first.png', mimeType: 'image/png' });
  });

  it('names that look like Object.prototype members are plain parameters; camelCase media keys beat snake_case', () => {
    const i = input({ native: { toString: 1, hasOwnProperty: 'x', image: { gcs_uri: 'gs://a/old.png', gcsUri: 'gs://a/new.png' } } });
    const b = body(i);
    expect(b['parameters']).toEqual({ generateAudio: true, toString: 1, hasOwnProperty: 'x' });
    expect((b['instances'] as JsonObject[])[0]!['image']).toEqual({ gcsUri: 'gs://a/new.png', mimeType: 'image/png' });
  });

  it('labels go to the top level; a native instances array merges over the derived instance', () => {
    const i = input({ native: { labels: { team: 'promo' }, instances: [{ extraInstanceField: 1 }] } });
    expect(body(i)).toEqual({
      instances: [{ prompt: 'a red fox running through snow', extraInstanceField: 1 }],
      parameters: { generateAudio: true },
      labels: { team: 'promo' },
    });
  });

  it('upstream options: storage_uri and generate_audio defaults, a native value wins', () => {
    const up = upstream({ storage_uri: 'gs://default-bucket/veo/', generate_audio: false });
    expect(body(input(), up)['parameters']).toEqual({ generateAudio: false, storageUri: 'gs://default-bucket/veo/' });
    const own = input({ native: { storageUri: 'gs://mine/', generateAudio: true } });
    expect(body(own, up)['parameters']).toEqual({ generateAudio: true, storageUri: 'gs://mine/' });
  });

  it('without a base URL the regional (or global) Vertex endpoint of the location is used', () => {
    const eu = veo.buildCreate(input(), upstream({ location: 'europe-west4' }, { baseUrl: '' }));
    expect(eu.url).toBe(
      'https://europe-west4-aiplatform.googleapis.com/v1/projects/acme-video/locations/europe-west4/publishers/google/models/veo-3.1-generate-001:predictLongRunning',
    );
    const global = veo.buildCreate(input(), upstream({ location: 'global' }, { baseUrl: '' }));
    expect(global.url.startsWith('https://aiplatform.googleapis.com/v1/projects/acme-video/locations/global/')).toBe(true);
  });

  it('an upstream without a project is a configuration error', () => {
    expect(() => veo.buildCreate(input(), upstream({ project: '' }))).toThrow(/project/);
  });
});
