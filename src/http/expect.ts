import type { Server } from 'node:http';
import { errors } from '../core/errors.js';

/**
 * Node answers a request whose `Expect` header is anything but `100-continue` with a bare 417 and an
 * empty body before any route runs. The refusal goes out here in the spec's error shape, as a 400
 * (the spec's statuses have no 417). The
 * request body is not read; Node discards it on the kept-alive connection.
 */
export function answerUnmetExpectations(server: Server): void {
  server.on('checkExpectation', (_req, res) => {
    const err = errors.expectationFailed();
    const body = JSON.stringify(err.toBody());
    res.writeHead(err.status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
}
