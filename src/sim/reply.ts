import type { ServerResponse } from 'node:http';
import { pipeline, Readable } from 'node:stream';
import { SMALL_ANSWER_BYTES } from '../http/answer-budget.js';
import type { BodyBudget } from '../http/body-budget.js';
import { guard } from '../http/streams.js';
import type { SimReply } from './framework.js';

/** How long a large simulated answer waits for room in the memory budget before it is refused. */
const MEMORY_WAIT_MS = 30_000;

/** Writes a simulator's reply: JSON, bytes, or a stream piped with backpressure. */
export async function send(res: ServerResponse, reply: SimReply, memory?: BodyBudget): Promise<void> {
  const headers: Record<string, string> = { ...(reply.headers ?? {}) };
  if (reply.json !== undefined) {
    const text = JSON.stringify(reply.json);
    headers['content-type'] ??= 'application/json';
    if (!(await holdMemory(res, text.length, memory))) return;
    res.writeHead(reply.status ?? 200, headers);
    res.end(text);
    return;
  }
  const body = reply.body;
  if (body instanceof Readable) {
    res.writeHead(reply.status ?? 200, headers);
    // pipeline, not pipe: a failing body or a client that leaves destroys both ends, with no stray error.
    await new Promise<void>((resolve) => pipeline(guard(body), res, () => resolve()));
    return;
  }
  if (body && !(await holdMemory(res, body.length, memory))) return;
  res.writeHead(reply.status ?? 200, headers);
  res.end(body ?? '');
}

/** Takes a large answer's bytes from `memory` until the response is over; false (503 sent) when no room came. */
async function holdMemory(res: ServerResponse, bytes: number, memory: BodyBudget | undefined): Promise<boolean> {
  if (!memory || bytes <= SMALL_ANSWER_BYTES) return true;
  if (!(await memory.take(bytes, MEMORY_WAIT_MS))) {
    res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' });
    res.end(JSON.stringify({ error: { message: 'simulator out of memory budget', type: 'server_error' } }));
    return false;
  }
  if (res.destroyed) {
    memory.give(bytes);
    return false;
  }
  res.once('close', () => memory.give(bytes));
  return true;
}
