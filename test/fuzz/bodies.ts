import fc from 'fast-check';
import { fieldValue, hostileAmount, hostileCount, nasty } from './values.js';

/**
 * Realistic JSON bodies per endpoint, close enough to valid to reach the code behind validation:
 * embeddings per vendor family (OpenAI-compatible, Vertex, Bedrock Marengo) with their `extra_body`
 * and `input_type`, chat with `max_tokens`/`n`/`stream`, video creates with each vendor's native
 * fields, OpenAI Videos creates and remixes, and admin bodies with hostile amounts.
 */
export interface BodyTargets {
  accounts: string[];
  keyIds: string[];
  fileIds: string[];
  adminToken: string;
  key: string;
  /** Model names by capability (video, embedding, chat). */
  byCapability: Record<string, string[]>;
  /** Every model name. */
  models: string[];
  /** Ids of real jobs, for the `video: {id}` of edits and extensions. */
  videoIds?: string[];
}

type Obj = Record<string, unknown>;

const pick = <T>(xs: T[], fallback: T) => (xs.length > 0 ? fc.constantFrom(...xs) : fc.constant(fallback));
/** Present in about a third of bodies: a body with every optional field set is rarely valid. */
const opt = <T>(a: fc.Arbitrary<T>) => fc.oneof({ weight: 2, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: a });
/** Mostly a valid value, sometimes a hostile one: a body should get past validation more often than not. */
const mostly = (valid: fc.Arbitrary<unknown>, hostile: fc.Arbitrary<unknown>) => fc.oneof({ weight: 4, arbitrary: valid }, { weight: 1, arbitrary: hostile });
/** A record whose keys are each present or not (undefined ones are dropped by JSON.stringify). */
const some = (shape: Record<string, fc.Arbitrary<unknown>>) => fc.record(Object.fromEntries(Object.entries(shape).map(([k, a]) => [k, opt(a)])));

const PNG_1PX = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

const prose = fc.oneof(fc.constantFrom('hello', 'hello world', 'a red fox in the snow'), fc.lorem({ maxCount: 12 }));
export const text = fc.oneof(
  { weight: 8, arbitrary: prose },
  { weight: 1, arbitrary: fc.constantFrom('[fail]', '[moderation]') },
  { weight: 2, arbitrary: nasty },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 300 }) },
  { weight: 1, arbitrary: fc.constantFrom('', ' ', '😀'.repeat(2000), 'zq'.repeat(3000), '\u0000'.repeat(10)) },
);

export const url = fc.oneof(
  fc.constantFrom(
    `data:image/png;base64,${PNG_1PX}`,
    'data:image/png;base64,',
    'data:,',
    'https://example.com/a.png',
    'http://127.0.0.1:1/x.png',
    'http://169.254.169.254/latest/meta-data',
    'http://[::1]/a.png',
    'file:///etc/passwd',
    's3://media-bucket/uploads/a.png',
    's3://other-bucket/x.mp4',
    'gs://bucket/a.png',
    'javascript:alert(1)',
  ),
  nasty,
);

/** Embedding inputs: text, batches, token ids, media for input_type, and too many items. */
const embeddingInput = fc.oneof(
  { weight: 6, arbitrary: prose },
  { weight: 6, arbitrary: fc.array(prose, { minLength: 1, maxLength: 6 }) },
  { weight: 2, arbitrary: text },
  { weight: 2, arbitrary: fc.array(text, { maxLength: 6 }) },
  { weight: 1, arbitrary: fc.array(fc.integer({ min: 0, max: 100_000 }), { minLength: 1, maxLength: 8 }) },
  { weight: 1, arbitrary: fc.array(fc.integer({ min: -1, max: 200_100 }), { maxLength: 8 }) },
  { weight: 1, arbitrary: fc.array(fc.array(fc.integer({ min: -1, max: 200_100 }), { maxLength: 4 }), { maxLength: 3 }) },
  { weight: 2, arbitrary: fc.constantFrom(PNG_1PX, `data:image/png;base64,${PNG_1PX}`, 's3://media-bucket/uploads/a.png', 's3://elsewhere/a.png', [PNG_1PX, PNG_1PX]) },
  { weight: 1, arbitrary: fc.constantFrom(Array.from({ length: 2049 }, () => 'x'), Array.from({ length: 300 }, () => 'word '.repeat(200)), [[]], [''], [1.5], [null]) },
);
const encodingFormat = mostly(fc.constantFrom('float', 'base64'), fc.constantFrom('FLOAT', 'int8', '', null));
const dimensions = mostly(fc.constantFrom(8, 64, 256, 512, 768, 1024, 1536, 3072), hostileCount);
const inputType = fc.oneof(fc.constantFrom('text', 'image', 'video', 'audio', 'IMAGE', 'search_query', ''), nasty);
const mediaSource = some({
  base64String: fc.oneof(fc.constant(PNG_1PX), nasty),
  s3Location: some({ uri: url, bucketOwner: fc.oneof(fc.constant('123456789012'), nasty) }),
  url,
});

/** What each vendor family's extra_body may carry, including the keys that would replace the input. */
const extraBody = {
  openai: fc.oneof(
    { weight: 3, arbitrary: some({ user: mostly(prose, nasty), dimensions, encoding_format: encodingFormat }) },
    { weight: 1, arbitrary: some({ input: embeddingInput, model: nasty, extra: fieldValue }) },
  ),
  vertex: fc.oneof(
    { weight: 3, arbitrary: some({ parameters: some({ autoTruncate: fc.boolean(), outputDimensionality: dimensions }), autoTruncate: fc.boolean() }) },
    { weight: 1, arbitrary: some({
    instances: fc.array(some({ content: text, task_type: nasty, title: text }), { maxLength: 3 }),
    parameters: some({ autoTruncate: fc.boolean(), outputDimensionality: hostileCount, content: text }),
    content: fc.oneof(text, some({ parts: fc.array(some({ text }), { maxLength: 2 }) })),
    taskType: nasty,
    outputDimensionality: hostileCount,
  }) }),
  bedrock: fc.oneof(
    { weight: 3, arbitrary: some({ textTruncate: fc.constantFrom('end', 'none'), embeddingOption: fc.constantFrom(['visual-text'], ['visual-image'], ['audio']), bucketOwner: fc.constant('123456789012') }) },
    { weight: 1, arbitrary: some({
    inputText: text,
    mediaSource,
    inputType,
    text: some({ inputText: text, textTruncate: fc.constantFrom('end', 'none', 'x') }),
    image: some({ mediaSource, inputText: text }),
    video: some({ mediaSource, startSec: hostileCount, lengthSec: hostileCount }),
    bucketOwner: fc.oneof(fc.constant('123456789012'), nasty),
    embeddingOption: fc.array(fc.constantFrom('visual-text', 'visual-image', 'audio', 'x'), { maxLength: 3 }),
    textTruncate: fc.constantFrom('end', 'none'),
  }) }),
};

const familyOfEmbedding = (m: string) => (/marengo|twelvelabs/.test(m) ? 'bedrock' : /gemini|text-embedding-0|multimodal/.test(m) ? 'vertex' : 'openai');

function embeddings(t: BodyTargets): fc.Arbitrary<Obj> {
  return pick(t.byCapability.embedding ?? [], 'm').chain((model) => {
    const family = familyOfEmbedding(model);
    return fc
      .tuple(
        some({
          encoding_format: encodingFormat,
          dimensions,
          user: mostly(prose, nasty),
          task_type: mostly(fc.constantFrom('RETRIEVAL_QUERY', 'RETRIEVAL_DOCUMENT', 'SEMANTIC_SIMILARITY', 'CODE_RETRIEVAL_QUERY'), nasty),
          title: text,
          input_type: family === 'bedrock' ? mostly(fc.constantFrom('text', 'image'), inputType) : mostly(fc.constant('text'), inputType),
        }),
        // Mostly the model's own family; sometimes another's (a vendor's refusal of foreign fields).
        fc.oneof({ weight: 4, arbitrary: extraBody[family] }, { weight: 1, arbitrary: fc.oneof(extraBody.openai, extraBody.vertex, extraBody.bedrock) }),
        fc.boolean(),
        // Marengo's image input is the image itself (base64, a data: URL, an s3:// URI).
        family === 'bedrock' ? fc.oneof(embeddingInput, fc.constantFrom(PNG_1PX, `data:image/png;base64,${PNG_1PX}`, 's3://media-bucket/uploads/a.png')) : embeddingInput,
      )
      .map(([fields, extra, withExtra, input]) => ({ model, input, ...fields, ...(withExtra ? { extra_body: extra } : {}) }));
  });
}

const contentPart = fc.oneof(
  fc.record({ type: fc.constant('text'), text }),
  fc.record({ type: fc.constant('image_url'), image_url: some({ url, detail: fc.constantFrom('low', 'high', 'auto', 'x') }) }),
  fc.record({ type: fc.constantFrom('input_audio', 'file', 'refusal', 'x'), text }),
);
const message = fc.record({
  role: mostly(fc.constantFrom('user', 'system', 'assistant', 'developer'), fc.constantFrom('tool', 'function', 'x', '', null)),
  content: mostly(prose, fc.oneof(text, fc.array(contentPart, { maxLength: 3 }), fc.constant(null))),
});
const tokens = mostly(fc.integer({ min: 1, max: 64 }), hostileCount);
const tool = fc.record({ type: fc.constantFrom('function', 'x'), function: some({ name: nasty, parameters: fieldValue, description: text }) });

function chat(t: BodyTargets): fc.Arbitrary<Obj> {
  return fc
    .tuple(
      pick(t.byCapability.chat ?? [], 'm'),
      fc.oneof({ weight: 3, arbitrary: fc.constant([{ role: 'user', content: 'hi' }]) }, { weight: 2, arbitrary: fc.array(message, { minLength: 1, maxLength: 5 }) }, { weight: 1, arbitrary: fc.array(message, { maxLength: 5 }) }),
      some({
        max_tokens: tokens,
        max_completion_tokens: tokens,
        n: mostly(fc.integer({ min: 1, max: 4 }), hostileCount),
        stream: mostly(fc.boolean(), fc.constantFrom('true', 1, null)),
        stream_options: mostly(some({ include_usage: fc.boolean() }), fieldValue),
        temperature: mostly(fc.double({ min: 0, max: 2, noNaN: true }), fieldValue),
        top_p: mostly(fc.double({ min: 0, max: 1, noNaN: true }), hostileCount),
        tools: fc.array(tool, { maxLength: 2 }),
        tool_choice: mostly(fc.constantFrom('auto', 'none', 'required'), fieldValue),
        response_format: mostly(fc.constantFrom({ type: 'json_object' }, { type: 'text' }, { type: 'json_schema', json_schema: { name: 'x', schema: {} } }), fieldValue),
        logprobs: fc.boolean(),
        top_logprobs: mostly(fc.integer({ min: 0, max: 20 }), hostileCount),
        stop: mostly(fc.oneof(prose, fc.array(prose, { maxLength: 4 })), fc.array(text, { maxLength: 5 })),
        seed: mostly(fc.integer(), hostileCount),
        user: mostly(prose, nasty),
        logit_bias: fc.dictionary(fc.string({ maxLength: 6 }), hostileCount, { maxKeys: 3 }),
      }),
    )
    .map(([model, messages, fields]) => ({ model, messages, ...fields }));
}


const anySize = fc.oneof(fc.constantFrom('1280x720', '720x1280', '1920x1080', '1024x1792', '480x480', '0x0', '1x1', '99999x99999', '1280*720', '1280X720', '-1x-1', 'x'), nasty);
const videoSize = mostly(fc.constantFrom('1280x720', '720x1280'), anySize);
const seconds = mostly(fc.constantFrom(4, 5, 8), hostileCount);
const goodUrl = fc.oneof({ weight: 9, arbitrary: fc.constant(`data:image/png;base64,${PNG_1PX}`) }, { weight: 1, arbitrary: url });

const frameImage = some({ image_url: goodUrl, frame_type: mostly(fc.constantFrom('first_frame', 'last_frame'), fc.constantFrom('middle', '')) });
const reference = some({ type: fc.constantFrom('video', 'image', 'audio', 'x'), url: goodUrl, role: fc.constantFrom('reference_video', 'reference_image', 'source_video', 'x') });

/** Each video vendor's own fields (spec 2.3, 2.4), with the values their checks sit on. */
const videoNative: Record<string, fc.Arbitrary<Obj>> = {
  wan: some({ media: fc.array(some({ type: fc.constantFrom('first_frame', 'last_frame', 'reference_image', 'x'), url }), { maxLength: 3 }), ratio: fc.constantFrom('16:9', '9:16', '1:1', 'x'), duration: seconds, template: nasty, reference_urls: fc.array(url, { maxLength: 2 }), first_frame_url: url, last_frame_url: url, audio_url: url, prompt_extend: fc.boolean(), watermark: fc.boolean() }),
  seedance: some({
    camera_fixed: fc.boolean(),
    watermark: fc.boolean(),
    draft: fc.boolean(),
    callback_url: url,
    content: fc.array(fc.oneof(fc.record({ type: fc.constant('text'), text }), fc.record({ type: fc.constantFrom('image_url', 'video_url', 'audio_url', 'draft_task', 'x'), image_url: some({ url }), role: fc.constantFrom('first_frame', 'last_frame', 'reference_image') })), { maxLength: 3 }),
    frames: mostly(fc.constantFrom(29, 57, 121), hostileCount),
    duration: mostly(fc.constantFrom(-1, 5, 10), hostileCount),
    ratio: fc.constantFrom('16:9', 'adaptive', 'x'),
  }),
  veo: some({
    durationSeconds: mostly(fc.constantFrom(4, 6, 8), hostileCount),
    sampleCount: mostly(fc.integer({ min: 1, max: 4 }), fc.oneof(fc.integer({ min: -1, max: 6 }), hostileCount)),
    personGeneration: fc.constantFrom('allow_adult', 'dont_allow', 'allow_all', 'x'),
    enhancePrompt: fc.boolean(),
    compressionQuality: fc.constantFrom('optimized', 'lossless', 'x'),
    resizeMode: fc.constantFrom('pad', 'crop'),
    storageUri: url,
    aspectRatio: fc.constantFrom('16:9', '9:16', '1:1'),
    aspect_ratio: fc.constantFrom('16:9', '9:16'),
    generateAudio: fc.boolean(),
    sample_count: hostileCount,
    last_frame: some({ bytesBase64Encoded: fc.constant(PNG_1PX), gcsUri: url, mimeType: fc.constantFrom('image/png', 'x') }),
    parameters: some({ fps: hostileCount, sampleCount: hostileCount, seed: hostileCount }),
  }),
  sora: some({ seconds: fc.oneof(fc.constantFrom('4', '8', '12', '10', '0', '-4', '4.5'), hostileCount), size: videoSize }),
  azure: some({ n_seconds: seconds, width: mostly(fc.constantFrom(480, 1280, 1920), hostileCount), height: mostly(fc.constantFrom(480, 720, 1080), hostileCount), n_variants: mostly(fc.constantFrom(1, 2), hostileCount) }),
  fal: some({ duration: fc.oneof(fc.constantFrom('5', '8s', '10', '4s', 'x'), hostileCount), aspect_ratio: fc.constantFrom('16:9', '9:16', '1:1', 'auto'), generate_audio: fc.boolean(), resolution: fc.constantFrom('720p', '1080p', 'x') }),
};

const familyOfVideo = (m: string) => (/^fal-ai\//.test(m) ? 'fal' : /^wan/.test(m) ? 'wan' : /seedance/.test(m) ? 'seedance' : /^veo/.test(m) ? 'veo' : /^sora-2/.test(m) ? 'sora' : /^sora/.test(m) ? 'azure' : 'sora');

function video(t: BodyTargets): fc.Arbitrary<Obj> {
  return pick(t.byCapability.video ?? [], 'm').chain((model) =>
    fc
      .tuple(
        some({
          seconds,
          size: videoSize,
          resolution: mostly(fc.constantFrom('720p', '1080p'), fc.constantFrom('480p', '4k', 'x')),
          aspect_ratio: fc.constantFrom('16:9', '9:16', '1:1', '0:0', 'a:b'),
          seed: mostly(fc.integer({ min: 0, max: 2 ** 31 - 1 }), hostileCount),
          negative_prompt: text,
          frame_images: mostly(fc.array(frameImage, { maxLength: 2 }), fc.array(frameImage, { maxLength: 4 })),
          input_references: fc.array(reference, { maxLength: 2 }),
        }),
        fc.oneof({ weight: 4, arbitrary: videoNative[familyOfVideo(model)]! }, { weight: 1, arbitrary: fc.oneof(...Object.values(videoNative)) }),
        text,
      )
      .map(([fields, native, prompt]) => ({ model, prompt, ...fields, ...native })),
  );
}

/** An OpenAI Videos create as JSON (the multipart form is built from the same fields). */
export function openAiVideo(t: BodyTargets): fc.Arbitrary<Obj> {
  return fc
    .tuple(
      fc.oneof({ weight: 3, arbitrary: fc.constantFrom('sora-2', 'sora-2-pro') }, { weight: 1, arbitrary: pick(t.byCapability.video ?? [], 'm') }, { weight: 1, arbitrary: fc.constant(undefined) }),
      some({
        seconds: mostly(fc.constantFrom('4', '8', '12'), fc.oneof(fc.constant('5'), hostileCount)),
        size: videoSize,
        input_reference: fc.oneof(goodUrl, some({ image_url: goodUrl, file_id: mostly(pick(t.fileIds, 'file-x'), nasty) })),
      }),
      text,
    )
    .map(([model, fields, prompt]) => ({ ...(model === undefined ? {} : { model }), prompt, ...fields }));
}

/** OpenAI video edits, extensions and characters as JSON (their multipart forms are built from the same fields). */
function derived(t: BodyTargets): Record<string, fc.Arbitrary<Obj>> {
  const video = mostly(some({ id: mostly(pick(t.videoIds ?? [], 'x'), nasty) }), fc.oneof(nasty, fc.constant({ id: 1 }), fc.constant([])));
  const model = fc.oneof(fc.constantFrom('sora-2', 'sora'), nasty);
  return {
    edit: fc.tuple(text, some({ video, model })).map(([prompt, f]) => ({ prompt, ...f })),
    extend: fc.tuple(text, some({ video, model, seconds: mostly(fc.constantFrom('4', '8', '20'), fc.oneof(fc.constant('7'), hostileCount)) })).map(([prompt, f]) => ({ prompt, ...f })),
    character: some({ name: fc.oneof(prose, nasty), model }),
  };
}

const quota = some({ rpm: mostly(fc.nat({ max: 10_000 }), hostileCount), tpm: mostly(fc.nat({ max: 1_000_000 }), hostileCount) });
const amount = mostly(fc.oneof(fc.integer({ min: 1, max: 1000 }), fc.constantFrom('12.5', '0.000001', '100')), hostileAmount);
const limits = some({ embeddings: quota, chat: quota, video: quota });
const budget = some({ total: amount, period: mostly(fc.constantFrom('day', 'month'), fc.constantFrom('week', null)), period_limit: amount });
const accountName = fc.oneof(fc.nat({ max: 1_000_000 }).map((n) => `fuzz-${n}`), nasty);

/** Admin and console bodies: money and limits at their edges. */
function admin(t: BodyTargets): Record<string, fc.Arbitrary<Obj>> {
  const account = fc.oneof(pick(t.accounts, 'demo'), nasty);
  return {
    account: fc.tuple(accountName, some({ balance: amount, upstreams: fc.oneof(fc.constant(null), fc.array(fc.oneof(fc.constantFrom('openai-sim', 'veo-sim'), nasty), { maxLength: 2 })), limits })).map(([name, f]) => ({ name, ...f })),
    topup: fc.tuple(amount, opt(nasty)).map(([amount, note]) => ({ amount, note })),
    key: fc
      .tuple(
        account,
        some({
          models: fc.array(fc.oneof(fc.constant('*'), pick(t.models, 'm'), nasty), { maxLength: 3 }),
          actions: fc.array(fc.constantFrom('video', 'embeddings', 'chat', 'models', 'admin', ''), { maxLength: 4 }),
          expires: fc.oneof(fc.constantFrom('30d', '1h', '0d', '-1d', '99999999d', '1e3d', '2000-01-01', '2999-12-31T00:00:00Z', '1s'), nasty),
          name: nasty,
          limits,
          budget: fc.oneof(budget, fc.constant(null)),
        }),
      )
      .map(([acc, f]) => ({ account: acc, ...f })),
    budget: fc.oneof(budget, fc.constant(null)).map((b) => ({ budget: b })),
    accountPatch: some({ upstreams: fc.oneof(fc.constant(null), fc.array(nasty, { maxLength: 2 })), limits }),
    webhook: fc
      .tuple(account, fc.oneof(fc.constantFrom('https://93.184.216.34/hook', 'http://127.0.0.1/hook', 'https://[::1]/h', 'https://10.0.0.1/h', 'ftp://x/y'), url), opt(fc.array(fc.oneof(fc.constantFrom('video.completed', 'video.failed', '*'), nasty), { maxLength: 11 })))
      .map(([acc, u, events]) => ({ account: acc, url: u, events })),
    session: fc.oneof(fc.constantFrom(t.adminToken, t.key), nasty).map((token) => ({ token })),
    remix: some({ prompt: fc.oneof(text, fieldValue) }),
  };
}

/** The body arbitrary of each kind of route. */
export function bodyArbitraries(t: BodyTargets): Record<string, fc.Arbitrary<Obj>> {
  return { video: video(t), embeddings: embeddings(t), chat: chat(t), openaiVideo: openAiVideo(t), ...derived(t), ...admin(t) };
}
