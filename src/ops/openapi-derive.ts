import type { OperationDoc } from './openapi-operations.js';
import { ref } from './openapi-schemas.js';

type Schema = Record<string, unknown>;
const json = (schema: Schema) => ({ 'application/json': schema });
const ERRORS = [400, 401, 402, 403, 404, 408, 413, 422, 429, 500, 502, 503, 504];
const VIDEO_REF = {
  description: 'A completed video of the account as {id} (video[id] in a form), or an uploaded MP4, MOV or WebM file (multipart).',
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string' } },
};
const CHARACTER = json({
  type: 'object',
  properties: { id: { type: 'string' }, created_at: { type: 'integer' }, name: { type: ['string', 'null'] }, vendor_data: { type: 'object' } },
});

/** OpenAI's video edits, extensions and characters (routes/openai-video-derive.ts). */
export const DERIVE_OPERATIONS: Record<string, OperationDoc> = {
  'POST /v1/videos/edits': {
    summary: 'Edit a completed or uploaded video',
    tag: 'videos',
    description:
      'JSON or multipart/form-data: prompt, video. Held and billed like a create as long as the source video; runs on the upstream that made the source. Models whose vendor has no edits: 400 operation_unsupported.',
    body: { type: 'object', required: ['prompt', 'video'], properties: { prompt: { type: 'string' }, video: VIDEO_REF, model: { type: 'string' } } },
    success: { status: 200, description: 'The new video, queued.', content: json(ref('OpenAiVideo')) },
    errors: ERRORS,
    idempotent: true,
  },
  'POST /v1/videos/extensions': {
    summary: 'Extend a completed or uploaded video',
    tag: 'videos',
    description:
      'JSON or multipart/form-data: prompt, seconds (the new segment: 4, 8, 12, 16 or 20 on Sora), video. Held for the new segment; billed for the stitched total the vendor reports less the source length. The finished object reports the stitched total in seconds.',
    body: {
      type: 'object',
      required: ['prompt', 'seconds', 'video'],
      properties: { prompt: { type: 'string' }, seconds: { type: 'string' }, video: VIDEO_REF, model: { type: 'string' } },
    },
    success: { status: 200, description: 'The new video, queued.', content: json(ref('OpenAiVideo')) },
    errors: ERRORS,
    idempotent: true,
  },
  'POST /v1/videos/characters': {
    summary: 'Create a character from a video',
    tag: 'videos',
    description: 'multipart/form-data: name (1-80 characters, no control characters), video (a file), optional model (default sora-2). Not billed; counts against the video rate limits. The id is sealed: it opens only for the account that made it.',
    success: { status: 200, description: 'The character.', content: CHARACTER },
    errors: [400, 401, 403, 408, 413, 429, 500, 502, 503, 504],
    idempotent: true,
  },
  'GET /v1/videos/characters/:id': {
    summary: 'Get a character',
    tag: 'videos',
    description: "Read from the upstream that made it. Another account's id, or one that does not open: 404 character_not_found.",
    success: { status: 200, description: 'The character.', content: CHARACTER },
    errors: [400, 401, 403, 404, 408, 429, 500, 502, 503, 504],
  },
};
