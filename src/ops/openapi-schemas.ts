/**
 * JSON Schemas (2020-12, as OpenAPI 3.1 takes them) of the public objects, used only to describe
 * the API: requests are validated by the services' own parsers (and admin bodies by their zod
 * schemas, which the document is generated from). Named schemas end up under components/schemas.
 */
type Schema = Record<string, unknown>;

const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });

export const componentSchemas: Record<string, Schema> = {
  Error: {
    type: 'object',
    required: ['error'],
    properties: {
      error: {
        type: 'object',
        required: ['type', 'message'],
        properties: {
          type: {
            type: 'string',
            enum: ['invalid_request_error', 'authentication_error', 'insufficient_quota', 'permission_denied', 'not_found',
              'request_timeout', 'rate_limit_error', 'server_error'],
          },
          message: { type: 'string' },
          code: { type: 'string', description: 'One of the codes listed in the response descriptions (docs/errors.md).' },
          param: { type: 'string', description: 'The offending field, as a dotted or indexed path.' },
        },
      },
    },
  },
  VideoCreateRequest: {
    type: 'object',
    required: ['model', 'prompt'],
    description: 'Standard fields below; every other top-level field is a native vendor parameter passed through unchanged.',
    additionalProperties: true,
    properties: {
      model: { type: 'string', examples: ['sora-2'] },
      prompt: { type: 'string' },
      seconds: { type: ['number', 'string'], description: 'Requested duration in seconds.' },
      size: { type: 'string', examples: ['1280x720'] },
      resolution: { type: 'string', examples: ['720p'] },
      aspect_ratio: { type: 'string', examples: ['16:9'] },
      ratio: { type: 'string', description: 'Alias of aspect_ratio.' },
      frame_images: {
        type: 'array',
        items: { type: 'object', properties: { image_url: { type: 'string' }, frame: { type: ['string', 'integer'] } }, additionalProperties: true },
      },
      input_references: { type: 'array', items: { type: 'object', properties: { url: { type: 'string' } }, additionalProperties: true } },
    },
  },
  OpenAiVideoCreateRequest: {
    type: 'object',
    properties: {
      model: { type: 'string', description: 'Default sora-2.' },
      prompt: { type: 'string' },
      seconds: { type: 'string', description: 'Seconds as a string, e.g. "8".' },
      size: { type: 'string', description: 'WxH, e.g. 1280x720.' },
      input_reference: { description: 'An image or video file (multipart), {image_url}, {file_id} (a file uploaded to /v1/files), or an image URL.' },
    },
    required: ['prompt'],
    additionalProperties: true,
  },
  OpenAiVideo: {
    type: 'object',
    required: ['id', 'object', 'status', 'model', 'progress', 'created_at', 'seconds'],
    properties: {
      id: { type: 'string' },
      object: { const: 'video' },
      status: { type: 'string', enum: ['queued', 'in_progress', 'completed', 'failed'] },
      model: { type: 'string' },
      progress: { type: 'integer', minimum: 0, maximum: 100 },
      created_at: { type: 'integer' },
      completed_at: { type: ['integer', 'null'] },
      expires_at: { type: ['integer', 'null'] },
      error: { type: ['object', 'null'], properties: { code: { type: 'string' }, message: { type: 'string' } } },
      prompt: { type: ['string', 'null'] },
      remixed_from_video_id: { type: ['string', 'null'] },
      seconds: { type: 'string' },
      size: { type: ['string', 'null'] },
      vendor_data: { type: 'object', additionalProperties: true },
    },
  },
  VideoJob: {
    type: 'object',
    required: ['id', 'object', 'status', 'model', 'seconds', 'created_at', 'vendor_data'],
    properties: {
      id: { type: 'string', description: 'Opaque sealed id; pass it back verbatim.' },
      object: { const: 'video' },
      status: { type: 'string', enum: ['processing', 'completed', 'failed'] },
      model: { type: 'string' },
      seconds: { type: 'number' },
      progress: { type: 'number', minimum: 0, maximum: 100 },
      created_at: { type: 'integer', description: 'Unix seconds.' },
      completed_at: { type: 'integer' },
      output_url: { type: 'string', description: 'Signed gateway link to the video; works without headers.' },
      usage: { type: 'object', additionalProperties: true },
      error: {
        type: 'object',
        properties: {
          code: {
            type: 'string',
            enum: ['content_policy_violation', 'invalid_media', 'unsupported_parameters', 'generation_failed', 'cancelled', 'expired', 'timeout'],
          },
          message: { type: 'string' },
        },
      },
      vendor_data: { type: 'object', additionalProperties: true },
    },
  },
  EmbeddingsRequest: {
    type: 'object',
    required: ['model', 'input'],
    properties: {
      model: { type: 'string', examples: ['text-embedding-3-small'] },
      input: {
        oneOf: [
          { type: 'string' },
          { type: 'array', items: { type: 'string' }, maxItems: 2048 },
          { type: 'array', items: { type: 'integer' } },
          { type: 'array', items: { type: 'array', items: { type: 'integer' } }, maxItems: 2048 },
        ],
      },
      encoding_format: { type: 'string', enum: ['float', 'base64'] },
      dimensions: { type: 'integer', minimum: 1 },
      user: { type: 'string' },
      task_type: { type: 'string', description: 'Vertex AI task type.' },
      title: { type: 'string', description: 'Vertex AI document title.' },
      input_type: { type: 'string', enum: ['text', 'image', 'video', 'audio'] },
      extra_body: { type: 'object', additionalProperties: true, description: 'Merged into the vendor request body.' },
    },
  },
  EmbeddingsResponse: {
    type: 'object',
    required: ['object', 'data', 'model', 'usage'],
    properties: {
      object: { const: 'list' },
      data: {
        type: 'array',
        items: {
          type: 'object',
          required: ['object', 'index', 'embedding'],
          properties: {
            object: { const: 'embedding' },
            index: { type: 'integer' },
            embedding: { oneOf: [{ type: 'array', items: { type: 'number' } }, { type: 'string', contentEncoding: 'base64' }] },
          },
        },
      },
      model: { type: 'string' },
      usage: { type: 'object', properties: { prompt_tokens: { type: 'integer' }, total_tokens: { type: 'integer' } } },
    },
  },
  ChatRequest: {
    type: 'object',
    required: ['model', 'messages'],
    additionalProperties: true,
    description: 'OpenAI chat completions; every field is passed to the upstream (the model name mapped).',
    properties: {
      model: { type: 'string' },
      messages: { type: 'array', items: { type: 'object', additionalProperties: true } },
      stream: { type: 'boolean' },
      stream_options: { type: 'object', properties: { include_usage: { type: 'boolean' } } },
    },
  },
  ChatCompletion: {
    type: 'object',
    additionalProperties: true,
    description: "The upstream's chat.completion object, as it sent it.",
    properties: {
      id: { type: 'string' },
      object: { const: 'chat.completion' },
      choices: { type: 'array', items: { type: 'object', additionalProperties: true } },
      usage: { type: 'object', additionalProperties: true },
    },
  },
  Model: {
    type: 'object',
    required: ['id', 'object', 'created', 'owned_by', 'capabilities'],
    properties: {
      id: { type: 'string' },
      object: { const: 'model' },
      created: { type: 'integer' },
      owned_by: { type: 'string' },
      capabilities: { type: 'array', items: { type: 'string', enum: ['video', 'embedding', 'chat'] } },
    },
  },
  ModelList: { type: 'object', properties: { object: { const: 'list' }, data: { type: 'array', items: ref('Model') } } },
  Account: {
    type: 'object',
    properties: {
      id: { type: 'string' },
      name: { type: 'string' },
      balance: { type: 'string', description: 'Currency units, decimal.' },
      balance_micros: { type: 'integer' },
      upstreams: { oneOf: [{ const: 'all' }, { type: 'array', items: { type: 'string' } }] },
      limits: { type: 'object', additionalProperties: true },
      created_at: { type: 'string', format: 'date-time' },
    },
  },
  Key: {
    type: 'object',
    properties: {
      id: { type: 'string' },
      prefix: { type: 'string' },
      account_id: { type: 'string' },
      name: { type: ['string', 'null'] },
      models: { type: 'array', items: { type: 'string' } },
      actions: { type: 'array', items: { type: 'string' } },
      limits: { type: 'object', additionalProperties: true },
      expires_at: { type: ['string', 'null'], format: 'date-time' },
      revoked_at: { type: ['string', 'null'], format: 'date-time' },
      last_used_at: { type: ['string', 'null'], format: 'date-time' },
      created_at: { type: 'string', format: 'date-time' },
      budget: {
        type: ['object', 'null'],
        properties: { total: { type: ['string', 'null'] }, period: { enum: ['day', 'month', null] }, period_limit: { type: ['string', 'null'] } },
        additionalProperties: true,
      },
      key: { type: 'string', description: 'Only in the answer to a create: the key itself, shown once.' },
    },
  },
  LedgerEntry: {
    type: 'object',
    properties: {
      id: { type: 'integer' },
      kind: { type: 'string', enum: ['credit', 'hold', 'release', 'capture', 'charge'] },
      amount: { type: 'string' },
      amount_micros: { type: 'integer' },
      ref: { type: 'string' },
      note: { type: ['string', 'null'] },
      created_at: { type: 'string', format: 'date-time' },
    },
  },
  Readiness: {
    type: 'object',
    required: ['status', 'checks'],
    properties: {
      status: { type: 'string', enum: ['ready', 'not_ready'] },
      checks: {
        type: 'object',
        description: 'One entry per check: store, migrations, redis (when the limiter uses it), shutdown.',
        additionalProperties: {
          type: 'object',
          required: ['status', 'ms'],
          properties: { status: { type: 'string', enum: ['ok', 'failing'] }, reason: { type: 'string' }, ms: { type: 'number' } },
        },
      },
    },
  },
};

export { ref };
