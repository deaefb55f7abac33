import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { embeddingModule as bedrock } from '../../src/embeddings/vendors/bedrock/index.js';
import { embeddingModule as openai } from '../../src/embeddings/vendors/openai/index.js';
import { embeddingModule as vertex } from '../../src/embeddings/vendors/vertex/index.js';
import type { SimServer } from '../../src/sim/framework.js';
import type { UpstreamSpec } from './harness.js';

/**
 * One loopback server playing a hostile Vertex AI, Bedrock and OpenAI-compatible upstream at once:
 * every call is handed to the test's `answer`, with the vendor told apart by the path. Credentials
 * and signatures are not checked (the gateway's own tests of them live with each vendor).
 */
export const MODELS = { vertex: 'text-embedding-005', bedrock: 'us.twelvelabs.marengo-embed-2-7-v1:0', openai: 'text-embedding-3-small' } as const;
export type FakeVendor = keyof typeof MODELS;

export interface FakeCall {
  vendor: FakeVendor;
  /** The request body the gateway sent, parsed. */
  body: any;
  /** How many inputs the call carries. */
  inputs: number;
  res: ServerResponse;
}

export interface FakeVendors {
  /** Answers each call; the default answers 500. */
  answer: (call: FakeCall) => void | Promise<void>;
  specs(opts?: { timeoutMs?: number; openaiOptions?: Record<string, unknown> }): UpstreamSpec[];
  close(): Promise<void>;
}

export async function startFakeVendors(): Promise<FakeVendors> {
  const fake: FakeVendors = {
    answer: ({ res }) => void res.writeHead(500).end('{}'),
    specs: (opts = {}) => {
      const sim = { url, settings: { apiKey: 'fake-secret' }, requests: [], close: async () => undefined } as unknown as SimServer;
      const common = { sim, timeoutMs: opts.timeoutMs ?? 20_000 };
      return [
        { ...common, module: vertex, name: 'vertex-fake', models: [MODELS.vertex] },
        { ...common, module: bedrock, name: 'bedrock-fake', models: [MODELS.bedrock] },
        { ...common, module: openai, name: 'openai-fake', apiKey: 'sk-fake', models: [MODELS.openai], options: opts.openaiOptions },
      ];
    },
    close: () => new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    }),
  };
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '';
      const vendor: FakeVendor = path.includes(':predict') ? 'vertex' : path.startsWith('/model/') ? 'bedrock' : 'openai';
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
      const inputs = vendor === 'vertex' ? body.instances.length : vendor === 'bedrock' ? 1 : Array.isArray(body.input) ? body.input.length : 1;
      // A client that hangs up mid-answer makes writes fail; that is the point of some tests.
      res.on('error', () => undefined);
      void fake.answer({ vendor, body, inputs, res });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return fake;
}

/** A successful answer in the vendor's own shape, with `vectors` written as given (JSON text of each). */
export function vendorAnswer(vendor: FakeVendor, vectors: string[]): string {
  switch (vendor) {
    case 'vertex':
      return `{"predictions":[${vectors.map((v) => `{"embeddings":{"statistics":{"truncated":false,"token_count":3},"values":${v}}}`).join(',')}]}`;
    case 'bedrock':
      return `{"embedding":${vectors[0]}}`;
    case 'openai':
      return `{"object":"list","data":[${vectors.map((v, i) => `{"object":"embedding","index":${i},"embedding":${v}}`).join(',')}],"model":"${MODELS.openai}","usage":{"prompt_tokens":3,"total_tokens":3}}`;
  }
}

export function sendJson(res: ServerResponse, body: string): void {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) });
  res.end(body);
}

/** base64 of float32 little-endian values, as OpenAI's `encoding_format: "base64"`. */
export function base64Floats(values: number[]): string {
  return Buffer.from(new Float32Array(values).buffer).toString('base64');
}
