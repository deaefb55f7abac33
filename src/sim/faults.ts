import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SimRequest } from './framework.js';

/** Failure injected into the next matching request(s). */
export type Fault =
  // `body`, when given, is sent as it is instead of `json` (an answer rendered once, however large).
  | { kind: 'status'; status: number; json?: unknown; body?: string | Buffer; headers?: Record<string, string> }
  | { kind: 'timeout' } // accept the request and never answer
  | { kind: 'reset' } // destroy the connection without an answer
  | { kind: 'malformed' } // 200 with a body that is not JSON
  | { kind: 'latency'; ms: number } // answer normally after a delay
  | { kind: 'hold'; until: Promise<unknown> } // answer normally once `until` settles (a test acts meanwhile)
  | EchoFault;

/**
 * A misbehaving upstream (or a proxy in front of one) that quotes the credentials it received, and any
 * `extra` text given (configured secrets it could not have received, e.g. an AWS secret key), in every
 * field a vendor's error envelope may carry: OpenAI/Azure/Ark `error.{message,param,code}`, DashScope
 * and Bedrock `message`, Vertex `error.status`, fal `detail[]`. `sse` answers 200 with an event stream
 * whose second event is the error (a chat stream breaking mid-way); `completion` answers 200 with a
 * chat completion whose generated message is the quote (a model repeating what its server saw).
 */
export interface EchoFault {
  kind: 'echo';
  status: number;
  /** The vendor error code to carry (decides the verdict: moderation codes, quota codes ...). */
  code?: string;
  extra?: readonly string[];
  sse?: boolean;
  completion?: boolean;
}

const CREDENTIAL_HEADERS = /^(authorization|api-key|x-api-key|x-goog-api-key|x-amz-security-token|x-amz-content-sha256|proxy-authorization)$/i;

/**
 * Text quoting every credential a request carried (headers and query string), and each as a hex dump
 * with colons and percent-encoded, as a debugging proxy or a URL in a message shows it.
 */
export function echoOfCredentials(req: SimRequest, extra: readonly string[] = []): string {
  const parts: string[] = [];
  const quote = (label: string, v: string) => parts.push(`${label}: ${v}`, `${label} as hex: ${hexWithColons(v)}`, `${label} in a URL: ${encodeURIComponent(v)}`);
  for (const [k, v] of Object.entries(req.headers)) if (CREDENTIAL_HEADERS.test(k)) quote(k, String(v));
  const q = req.query.toString();
  if (q) parts.push(`query ${q}`);
  for (const e of extra) quote('configured', e);
  return `Request rejected; it carried ${parts.join('; ') || 'nothing'}`;
}

/** The UTF-8 bytes of `s` in hex, a colon between two. */
export const hexWithColons = (s: string): string => [...Buffer.from(s, 'utf8')].map((b) => b.toString(16).padStart(2, '0')).join(':');

function echoBody(req: SimRequest, f: EchoFault): Record<string, unknown> {
  const text = echoOfCredentials(req, f.extra);
  const code = f.code ?? 'InvalidParameter';
  return {
    error: { message: text, param: text, code, type: 'invalid_request_error', status: text, details: [{ reason: text }] },
    message: text,
    code,
    detail: [{ loc: ['body', text], msg: text, type: code }],
    request_id: text,
  };
}

/**
 * Plays an injected fault on a request. True when the fault answered (or dropped) it; false when
 * the request goes on to the simulator's handler (a delay, or a request held until a test lets it go).
 */
export async function answerFault(fault: Fault, req: IncomingMessage, res: ServerResponse, simReq: SimRequest): Promise<boolean> {
  switch (fault.kind) {
    case 'timeout':
      return true; // never answer; the socket is destroyed on close()
    case 'reset':
      req.socket.destroy();
      return true;
    case 'malformed':
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"this is": not json');
      return true;
    case 'status':
      res.writeHead(fault.status, { 'content-type': 'application/json', ...(fault.headers ?? {}) });
      res.end(fault.body ?? JSON.stringify(fault.json ?? { error: { message: `injected ${fault.status}` } }));
      return true;
    case 'latency':
      await new Promise((r) => setTimeout(r, fault.ms));
      return false;
    case 'hold':
      // The request is already recorded, so a test can wait for it to arrive, act, then let it go.
      await fault.until.catch(() => undefined);
      return false;
    case 'echo':
      if (fault.sse) {
        const first = { id: 'chatcmpl-echo', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'Hi' } }] };
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(`data: ${JSON.stringify(first)}\n\ndata: ${JSON.stringify(echoBody(simReq, fault))}\n\n`);
        return true;
      }
      if (fault.completion) {
        const content = echoOfCredentials(simReq, fault.extra);
        const choices = [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }];
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ id: 'chatcmpl-echo', object: 'chat.completion', choices, usage: { prompt_tokens: 5, completion_tokens: 50 } }));
        return true;
      }
      res.writeHead(fault.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(echoBody(simReq, fault)));
      return true;
  }
}
