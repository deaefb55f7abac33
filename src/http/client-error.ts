import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { errors } from '../core/errors.js';

type ParserSocket = Socket & { parser?: { incoming?: IncomingMessage | null } | null; _httpMessage?: ServerResponse | null };

/** Connections whose refusal is already written or waiting: the parser reports every later chunk again. */
const refused = new WeakSet<Socket>();

/**
 * Answers what Node's HTTP parser refused (bad framing, a malformed header, a head over the size
 * limit, a head that took too long) in the spec's error shape, then closes the connection.
 *
 * Bytes after a complete request are the next request on the connection, or nothing at all: after
 * a request that said `Connection: close`, they are ignored (RFC 9112 9.6; llhttp reports them as
 * HPE_CLOSED_CONNECTION) and the answer to that request closes the connection. Otherwise the
 * refusal waits for the answers still being written for the requests before them, as pipelining
 * wants: written at once, it would end the connection in the middle of them (a video create with
 * one stray byte after its body was held and run, and its client got only a 400). A request that
 * already has its answer gets no second one.
 */
export function answerClientError(err: Error, socket: Socket): void {
  if (!socket.writable) return void socket.destroy();
  const kind = (err as { code?: string }).code;
  if (kind === 'HPE_CLOSED_CONNECTION' || refused.has(socket)) return;
  refused.add(socket);
  const s = socket as ParserSocket;
  // The parser's last request: the refused one if its body failed, else a complete one before it.
  const incoming = s.parser?.incoming ?? undefined;
  const failing = incoming && !incoming.complete ? incoming : undefined;
  // The refused request was answered already (a 401 or 413 sent before its body was read, whose
  // rest is being discarded): a second answer would be read as the answer to the client's next one.
  // Its answer may still be attached to the connection when the parser fails in the same packet
  // (written, its 'finish' not yet come): then the connection closes once that answer is out.
  if (failing) {
    if (!s._httpMessage) return void socket.end();
    const own = answerTo(s, failing);
    if (own) return endAfter(own, socket);
  }
  // Read now: the parser is released once the connection closes.
  const head = isHead(err, incoming);
  afterAnswersBefore(s, failing, () => {
    if (!socket.writable) return void socket.destroy();
    // Answered while the answers before it were being written (pipelined): no second answer either.
    const own = failing && answerTo(s, failing);
    if (own) return endAfter(own, socket);
    // ERR_HTTP_REQUEST_TIMEOUT: the request head did not complete within server.headers_timeout_ms.
    const refusal =
      kind === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? errors.requestTimeout('The request head did not arrive in time.')
        : errors.invalidRequest('Malformed HTTP request.', undefined, 'malformed_request');
    const status = kind === 'HPE_HEADER_OVERFLOW' ? 431 : refusal.status;
    const text = STATUS_CODES[status] ?? 'Bad Request';
    const body = JSON.stringify(refusal.toBody());
    socket.end(`HTTP/1.1 ${status} ${text}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${randomUUID()}\r\nConnection: close\r\n\r\n${head ? '' : body}`);
  });
}

/** The answer the connection holds when it is `failing`'s own, already begun. */
function answerTo(s: ParserSocket, failing: IncomingMessage): ServerResponse | undefined {
  const own = s._httpMessage as (ServerResponse & { req?: IncomingMessage }) | null | undefined;
  return own && own.req === failing && own.headersSent ? own : undefined;
}

/** Closes the connection once `answer` is written whole (at once when it is, or when it is cut). */
function endAfter(answer: ServerResponse, socket: Socket): void {
  if (answer.writableFinished) return void socket.end();
  const end = () => {
    answer.off('finish', end);
    answer.off('close', end);
    socket.end();
  };
  answer.once('finish', end);
  answer.once('close', end);
}

/**
 * Whether the refused request is a HEAD (its answer then has no body). This answer bypasses Node's
 * response object, which is what drops bodies on HEAD; a body after a HEAD answer is read by the
 * client as the start of a next response it cannot parse. The method: from the request object
 * when the head was complete (an error in the body), else from `rawPacket`, the chunk the parser
 * failed in (the request's start when its head came in one piece). A head split over several
 * chunks leaves it unknown, and a body is sent.
 */
function isHead(err: Error, incoming: IncomingMessage | undefined): boolean {
  if (incoming?.method) return incoming.method === 'HEAD';
  const packet: unknown = (err as unknown as { rawPacket?: unknown }).rawPacket;
  return Buffer.isBuffer(packet) && packet.toString('latin1', 0, 5) === 'HEAD ';
}

/**
 * Runs `then` once no answer to an earlier, complete request is being written on the connection
 * (each one in turn: Node attaches the next pipelined answer when one finishes). An answer to the
 * refused request itself (its body failed to parse) is not waited for: it may never come.
 */
function afterAnswersBefore(socket: ParserSocket, failing: IncomingMessage | undefined, then: () => void): void {
  const res = socket._httpMessage;
  const req = (res as (ServerResponse & { req?: IncomingMessage }) | null | undefined)?.req;
  if (!res || !req || req === failing || !req.complete || res.writableFinished) return then();
  let done = false;
  const next = () => {
    if (done) return;
    done = true;
    res.off('finish', next);
    res.off('close', next);
    // Node's own 'finish' listener (registered first) has already moved on to the next answer.
    if (socket.destroyed) return;
    afterAnswersBefore(socket, failing, then);
  };
  res.once('finish', next);
  res.once('close', next);
}
