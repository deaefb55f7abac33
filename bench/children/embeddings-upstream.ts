import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { embeddingsAnswer as answer, MODEL } from './embeddings-answer.js';
import { childOptions, runChild } from './child.js';

/**
 * A minimal OpenAI-compatible embeddings upstream for the benchmark: `POST /v1/embeddings` with
 * Bearer auth, answering one 1,536-float vector per input (about 20 KB of JSON as floats, 8 KB as
 * base64) with `usage`. Each vector is rendered once per format at start, so the upstream costs
 * little CPU per request and the two cores stay with the load generator and the path under test.
 * (src/embeddings/vendors/openai's simulator computes and prints every vector per request: about
 * 0.5 ms of CPU and 32 KB per answer, which would make the simulator the bottleneck at 1,000 req/s.)
 */
export interface EmbeddingsUpstreamInfo {
  url: string;
  apiKey: string;
  model: string;
}

/** Single-input answers are cached per (format, tokens): the benchmark sends the same text every time. */
const cache = new Map<string, Buffer>();

function send(res: ServerResponse, status: number, body: string | Buffer): void {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

function error(res: ServerResponse, status: number, message: string, param: string | null, code: string | null): void {
  send(res, status, JSON.stringify({ error: { message, type: 'invalid_request_error', param, code } }));
}

/** Roughly OpenAI's 4 characters per token; exact counts do not matter to the benchmark. */
function tokensOf(input: unknown): number {
  if (typeof input === 'string') return Math.max(1, Math.ceil(input.length / 4));
  if (Array.isArray(input)) return input.length;
  return 1;
}

function handle(req: IncomingMessage, res: ServerResponse, raw: Buffer, apiKey: string): void {
  if (req.method !== 'POST' || req.url !== '/v1/embeddings') return error(res, 404, 'Unknown request URL.', null, 'unknown_url');
  if (req.headers['authorization'] !== `Bearer ${apiKey}`) return error(res, 401, 'Incorrect API key provided.', null, 'invalid_api_key');
  let body: { model?: unknown; input?: unknown; encoding_format?: unknown };
  try {
    body = JSON.parse(raw.toString('utf8')) as typeof body;
  } catch {
    return error(res, 400, 'We could not parse the JSON body of your request.', null, null);
  }
  if (body.model !== MODEL) return error(res, 404, `The model \`${String(body.model)}\` does not exist.`, null, 'model_not_found');
  const format = body.encoding_format ?? 'float';
  if (format !== 'float' && format !== 'base64') return error(res, 400, `Invalid value for 'encoding_format': ${String(format)}.`, 'encoding_format', null);
  const inputs = typeof body.input === 'string' ? [body.input] : Array.isArray(body.input) && typeof body.input[0] === 'string' ? body.input : undefined;
  if (!inputs || inputs.length === 0) return error(res, 400, "'$.input' is invalid.", 'input', null);
  const tokens = inputs.reduce((n: number, t: unknown) => n + tokensOf(t), 0);
  if (inputs.length > 1) return send(res, 200, answer(inputs.length, format, tokens));
  const key = `${format}:${tokens}`;
  let cached = cache.get(key);
  if (!cached) {
    cached = Buffer.from(answer(1, format, tokens));
    cache.set(key, cached);
  }
  send(res, 200, cached);
}

runChild(async () => {
  const { apiKey = 'sk-bench-upstream' } = childOptions<{ apiKey?: string }>();
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handle(req, res, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks), apiKey));
  });
  server.keepAliveTimeout = 60_000;
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const info: EmbeddingsUpstreamInfo = { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, apiKey, model: MODEL };
  return {
    info,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
});
