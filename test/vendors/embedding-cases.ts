import type { JsonObject } from '../../src/core/json.js';
import type { Upstream, UpstreamVerdict } from '../../src/http/types.js';
import type { BatchResult, BuildContext, EmbeddingRequest } from '../../src/embeddings/types.js';

/**
 * How each embeddings vendor's documented examples (fixtures/vendors/embeddings/<id>/) meet its
 * adapter: the gateway request behind the documented upstream request, the documented answer and what
 * it parses to, and the verdict of every documented error kind.
 */
type Obj = Record<string, any>;

export interface EmbeddingExample {
  request: string;
  /** The gateway-side context (request, upstream, model) that should produce the documented request. */
  context(doc: Obj): BuildContext;
  /** The documented request as the adapter must send it, when it differs in a documented way. */
  documented?(doc: Obj): JsonObject;
  url?: string;
  response?: string;
  /** The documented answer with its placeholders replaced by values of the documented types. */
  answer?(doc: Obj): Obj;
  parsed?: BatchResult;
}

export interface EmbeddingCase {
  examples: EmbeddingExample[];
  errors: Record<string, UpstreamVerdict['kind']>;
  errorHeaders?(code: string): Record<string, string>;
}

const upstream = (over: Partial<Upstream>): Upstream => ({
  name: 'fixture',
  vendor: 'openai',
  baseUrl: 'https://example.invalid',
  models: [],
  priority: 1,
  weight: 1,
  timeoutMs: 10_000,
  options: {},
  ...over,
});

const request = (over: Partial<EmbeddingRequest>): EmbeddingRequest => ({ model: 'm', inputs: [], encodingFormat: 'float', extra: {}, ...over });

const openaiUp = upstream({ vendor: 'openai', baseUrl: 'https://api.openai.com', apiKey: 'sk-test' });
const vertexUp = upstream({ vendor: 'vertex', baseUrl: 'https://us-central1-aiplatform.googleapis.com', options: { project: 'PROJECT_ID', location: 'us-central1' } });
const bedrockUp = upstream({ vendor: 'bedrock', baseUrl: 'https://bedrock-runtime.us-east-1.amazonaws.com', apiKey: 'bedrock-api-key', options: { region: 'us-east-1' } });

export const embeddingCases: Record<string, EmbeddingCase> = {
  openai: {
    examples: [
      {
        request: 'request.json',
        context: (doc) => ({
          req: request({ model: doc.model, inputs: [doc.input], encodingFormat: doc.encoding_format }),
          upstreamModel: doc.model,
          up: openaiUp,
        }),
        // `input` is documented as a string or an array of strings; the gateway sends its batch as an array.
        documented: (doc) => ({ ...doc, input: [doc.input] }),
        url: 'https://api.openai.com/v1/embeddings',
        response: 'response.json',
        parsed: { vectors: [[0.0023064255, -0.009327292, -0.0028842222]], promptTokens: 8 },
      },
    ],
    errors: { invalid_api_key: 'auth', rate_limit_exceeded: 'retryable', invalid_request_error: 'client' },
  },

  vertex: {
    examples: [
      {
        request: 'request.json',
        context: (doc) => {
          const inst = doc.instances[0];
          return { req: request({ inputs: [inst.content], taskType: inst.task_type, title: inst.title }), upstreamModel: 'text-embedding-005', up: vertexUp };
        },
        url: 'https://us-central1-aiplatform.googleapis.com/v1/projects/PROJECT_ID/locations/us-central1/publishers/google/models/text-embedding-005:predict',
        response: 'response.json',
        parsed: { vectors: [[0.0123, -0.0456, 0.0789]], promptTokens: 6 },
      },
      {
        request: 'embed-content.request.json',
        context: (doc) => ({
          req: request({ inputs: [doc.content.parts[0].text], taskType: doc.taskType, dimensions: doc.outputDimensionality }),
          upstreamModel: 'gemini-embedding-2-preview',
          up: vertexUp,
        }),
        url: 'https://us-central1-aiplatform.googleapis.com/v1/projects/PROJECT_ID/locations/us-central1/publishers/google/models/gemini-embedding-2-preview:embedContent',
        response: 'embed-content.response.json',
        parsed: { vectors: [[0.0123, -0.0456, 0.0789]], promptTokens: 7 },
      },
    ],
    errors: { UNAUTHENTICATED: 'auth', RESOURCE_EXHAUSTED: 'retryable', INVALID_ARGUMENT: 'client' },
  },

  bedrock: {
    examples: [
      {
        request: 'request.json',
        // The documented base id; "Replace the {{us}} prefix depending on your region" -> us. in us-east-1.
        context: (doc) => ({ req: request({ inputs: [doc.inputText] }), upstreamModel: 'twelvelabs.marengo-embed-2-7-v1:0', up: bedrockUp }),
        url: 'https://bedrock-runtime.us-east-1.amazonaws.com/model/us.twelvelabs.marengo-embed-2-7-v1%3A0/invoke',
        response: 'response.json',
        answer: (doc) => ({ ...doc, embedding: [0.25, -0.5], startSec: 0, endsec: 0 }),
        parsed: { vectors: [[0.25, -0.5]], promptTokens: undefined },
      },
      {
        request: 'request.image-s3.json',
        context: (doc) => ({
          req: request({ inputs: [doc.mediaSource.s3Location.uri], inputType: 'image', extra: { bucketOwner: doc.mediaSource.s3Location.bucketOwner } }),
          upstreamModel: 'twelvelabs.marengo-embed-2-7-v1:0',
          up: bedrockUp,
        }),
      },
    ],
    errors: { AccessDeniedException: 'auth', ThrottlingException: 'retryable', ValidationException: 'client' },
    errorHeaders: (code) => ({ 'x-amzn-errortype': `${code}:http://internal.amazon.com/coral/com.amazon.bedrock/` }),
  },
};
