import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { costForTokens, toMicros } from '../../../src/core/money.js';
import { embeddingModule as bedrock } from '../../../src/embeddings/vendors/bedrock/index.js';
import { BEDROCK_SIM_API_KEY, marengoSimVector } from '../../../src/embeddings/vendors/bedrock/simulator.js';
import { simTokens } from '../../../src/sim/vectors.js';
import type { SimServer } from '../../../src/sim/framework.js';
import { asFloat32, post, startHarness, type Harness } from '../../embeddings/harness.js';

const M27 = 'us.twelvelabs.marengo-embed-2-7-v1:0';
const M30 = 'twelvelabs.marengo-embed-3-0-v1:0';
const INVOKE_27 = '/model/us.twelvelabs.marengo-embed-2-7-v1%3A0/invoke';
const INVOKE_30 = '/model/twelvelabs.marengo-embed-3-0-v1%3A0/invoke';
const PNG_B64 = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex').toString('base64');

describe('embeddings through Bedrock (TwelveLabs Marengo)', () => {
  let sim: SimServer;
  let h: Harness;
  let key: string;

  beforeAll(async () => {
    sim = await bedrock.simulator.start();
    h = await startHarness([{ module: bedrock, sim, options: { s3_input_prefixes: ['s3://bucket/'] } }]);
    ({ key } = await h.newKey(100));
  });
  afterAll(async () => {
    await h.close();
    await sim.close();
  });
  afterEach(() => sim.reset());

  it('signs with SigV4 and sends one text per InvokeModel call, in order', async () => {
    const inputs = ['a man crossing the street', 'a red car', 'sunset over water'];
    const r = await post(h, key, { model: M27, input: inputs });
    expect(r.status).toBe(200);
    const calls = sim.received('POST', INVOKE_27);
    expect(calls).toHaveLength(3);
    for (const c of calls) {
      expect(c.headers['authorization']).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIASIMBEDROCK00001\/\d{8}\/us-east-1\/bedrock\/aws4_request/);
      expect(c.json).toEqual({ inputType: 'text', inputText: expect.any(String) });
    }
    r.json.data.forEach((d: any, i: number) => {
      expect(d.index).toBe(i);
      expect(asFloat32(d.embedding)).toEqual(marengoSimVector(M27, 'text', inputs[i]!));
    });
    const tokens = inputs.reduce((s, t) => s + simTokens(t), 0);
    expect(r.json.usage.prompt_tokens).toBe(tokens);
  });

  it('a Marengo 2.7 configured by its base model id is invoked through the region\'s inference profile', async () => {
    // Bedrock refuses the base id on InvokeModel (on-demand throughput is not supported); the simulator too.
    const base = 'twelvelabs.marengo-embed-2-7-v1:0';
    const h2 = await startHarness([{ module: bedrock, sim, models: [base] }]);
    try {
      const { key: k } = await h2.newKey(1);
      const r = await post(h2, k, { model: base, input: 'a man crossing the street' });
      expect(r.status).toBe(200);
      expect(sim.received('POST', INVOKE_27)).toHaveLength(1);
      expect(sim.received('POST', `/model/${encodeURIComponent(base)}/invoke`)).toHaveLength(0);
      expect(asFloat32(r.json.data[0].embedding)).toEqual(marengoSimVector(M27, 'text', 'a man crossing the street'));
    } finally {
      await h2.close();
    }
  });

  it('passes input_type image on as inputType with the media source', async () => {
    const r = await post(h, key, { model: M27, input: [`data:image/png;base64,${PNG_B64}`, 's3://bucket/cat.png'], input_type: 'image', extra_body: { bucketOwner: '123456789012' } });
    expect(r.status).toBe(200);
    const bodies = sim.received('POST', INVOKE_27).map((c) => c.json);
    expect(bodies).toContainEqual({ inputType: 'image', mediaSource: { base64String: PNG_B64 } });
    expect(bodies).toContainEqual({ inputType: 'image', mediaSource: { s3Location: { uri: 's3://bucket/cat.png', bucketOwner: '123456789012' } } });
    expect(asFloat32(r.json.data[0].embedding)).toEqual(marengoSimVector(M27, 'image', PNG_B64));
    expect(asFloat32(r.json.data[1].embedding)).toEqual(marengoSimVector(M27, 'image', 's3://bucket/cat.png'));
  });

  it('refuses s3:// locations outside s3_input_prefixes (Bedrock reads them as the gateway), before any call or charge', async () => {
    const { key: k, accountId } = await h.newKey(1);
    const refused = [
      { input: 's3://other-bucket/secret.png', param: 'input' },
      { input: 's3://bucket-evil/x.png', param: 'input' },
      { input: '  S3://other-bucket/x.png', param: 'input' },
      { input: 's3://bucket/../other-bucket/x.png', param: 'input' },
      { input: 's3://bucket/a/./x.png', param: 'input' },
      // Native fields merge over the gateway's body: a location there would be read the same way.
      { input: `data:image/png;base64,${PNG_B64}`, extra_body: { mediaSource: { s3Location: { uri: 's3://other-bucket/secret.png' } } }, param: 'extra_body' },
    ];
    for (const { param, ...body } of refused) {
      const r = await post(h, k, { model: M27, input_type: 'image', ...body });
      expect(r.status).toBe(400);
      expect(r.json.error).toMatchObject({ type: 'invalid_request_error', code: 'media_location_not_allowed', param });
    }
    expect(sim.requests).toHaveLength(0);
    expect(await h.balance(accountId)).toBe(toMicros(1));

    // An upstream that lists none takes no s3:// input at all.
    const h2 = await startHarness([{ module: bedrock, sim }]);
    try {
      const { key: k2 } = await h2.newKey(1);
      const r = await post(h2, k2, { model: M27, input: 's3://bucket/cat.png', input_type: 'image' });
      expect(r.status).toBe(400);
      expect(r.json.error).toMatchObject({ code: 'media_location_not_allowed', param: 'input' });
      expect(r.json.error.message).toContain('base64');
      expect(sim.requests).toHaveLength(0);
    } finally {
      await h2.close();
    }
  });

  it('refuses an extra_body that would replace the input or its kind (the gateway counts and bills input), before any call or charge', async () => {
    const { key: k, accountId } = await h.newKey(1);
    const long = 'a much longer text than the input '.repeat(500);
    const cases: [string, Record<string, unknown>, string][] = [
      [M27, { inputText: long }, 'extra_body.inputText'],
      [M27, { mediaSource: { base64String: PNG_B64 } }, 'extra_body.mediaSource'],
      [M27, { inputType: 'video' }, 'extra_body.inputType'],
      [M30, { text: { inputText: long } }, 'extra_body.text.inputText'],
      [M30, { image: { mediaSource: { base64String: PNG_B64 } } }, 'extra_body.image.mediaSource'],
      [M30, { text_image: { inputText: long } }, 'extra_body.text_image.inputText'],
    ];
    for (const [model, extra_body, param] of cases) {
      const r = await post(h, k, { model, input: 'x', extra_body });
      expect(r.status, `${param}: ${JSON.stringify(r.json).slice(0, 300)}`).toBe(400);
      expect(r.json.error).toMatchObject({ type: 'invalid_request_error', code: 'input_in_extra_body', param });
    }
    // Top-level unknown fields are extra_body entries (the SDKs' extra_body sends them so).
    const top = await post(h, k, { model: M27, input: 'x', inputText: long });
    expect(top.json.error).toMatchObject({ code: 'input_in_extra_body', param: 'extra_body.inputText' });
    expect(sim.requests).toHaveLength(0);
    expect(await h.balance(accountId)).toBe(toMicros(1));
    // Other native fields still merge.
    const ok = await post(h, k, { model: M30, input: 'x', extra_body: { text: { textTruncate: 'none' } } });
    expect(ok.status, JSON.stringify(ok.json)).toBe(200);
    expect(sim.lastReceived('POST', INVOKE_30)!.json).toEqual({ inputType: 'text', text: { inputText: 'x', textTruncate: 'none' } });
  });

  it('embeds a text input that reads like an s3:// location as the text it is (Bedrock reads no location from inputText)', async () => {
    const text = 's3://other-bucket/reports/2024.pdf';
    const r = await post(h, key, { model: M27, input: text });
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    expect(sim.received('POST', INVOKE_27)[0]!.json).toEqual({ inputType: 'text', inputText: text });
    expect(asFloat32(r.json.data[0].embedding)).toEqual(marengoSimVector(M27, 'text', text));
  });

  it('uses the nested Marengo 3.0 request shape', async () => {
    const r = await post(h, key, { model: M30, input: 'a dog on a skateboard', encoding_format: 'base64' });
    expect(r.status).toBe(200);
    expect(sim.lastReceived('POST', INVOKE_30)!.json).toEqual({ inputType: 'text', text: { inputText: 'a dog on a skateboard' } });
    expect(asFloat32(r.json.data[0].embedding)).toEqual(marengoSimVector(M30, 'text', 'a dog on a skateboard'));
    expect(asFloat32(r.json.data[0].embedding)).toHaveLength(512);
  });

  it('answers video and audio with a 400 that points to the asynchronous API, without calling Bedrock', async () => {
    for (const input_type of ['video', 'audio']) {
      const r = await post(h, key, { model: M27, input: 's3://bucket/clip.mp4', input_type });
      expect(r.status).toBe(400);
      expect(r.json.error).toMatchObject({ type: 'invalid_request_error', code: 'unsupported_input_type', param: 'input_type' });
      expect(r.json.error.message).toContain('StartAsyncInvoke');
    }
    expect(sim.requests).toHaveLength(0);
  });

  it('bills the token count Bedrock reports in its header', async () => {
    const { key: k, accountId } = await h.newKey(1);
    const r = await post(h, k, { model: M27, input: 'count me' });
    expect(r.status).toBe(200);
    expect(toMicros(1) - (await h.balance(accountId))).toBe(costForTokens(toMicros(0.07), simTokens('count me')));
  });

  it('refuses dimensions the model cannot produce', async () => {
    const r = await post(h, key, { model: M30, input: 'x', dimensions: 256 });
    expect(r.status).toBe(400);
    expect(r.json.error.param).toBe('dimensions');
    expect((await post(h, key, { model: M30, input: 'x', dimensions: 512 })).status).toBe(200);
  });
});

describe('Bedrock credentials', () => {
  it('a wrong secret fails the signature check (upstream auth failure, not the client fault)', async () => {
    const sim = await bedrock.simulator.start();
    const h = await startHarness([{ module: bedrock, sim, options: { secret_access_key: 'not-the-secret' } }]);
    try {
      const { key } = await h.newKey(1);
      const r = await post(h, key, { model: M27, input: 'x' });
      expect(r.status).toBe(502);
      expect(sim.requests).toHaveLength(1);
    } finally {
      await h.close();
      await sim.close();
    }
  });

  it('a Bedrock API key goes as a Bearer token instead of a signature', async () => {
    const sim = await bedrock.simulator.start();
    const h = await startHarness([
      { module: bedrock, sim, options: { access_key_id: null, secret_access_key: null }, apiKey: BEDROCK_SIM_API_KEY },
    ]);
    try {
      const { key } = await h.newKey(1);
      const r = await post(h, key, { model: M27, input: 'bearer path' });
      expect(r.status).toBe(200);
      expect(sim.lastReceived('POST', INVOKE_27)!.headers['authorization']).toBe(`Bearer ${BEDROCK_SIM_API_KEY}`);
    } finally {
      await h.close();
      await sim.close();
    }
  });
});
