import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { childOptions, runChild } from './child.js';

/**
 * A stand-in OpenTelemetry collector: accepts OTLP/HTTP exports on POST /v1/traces, counts the
 * requests and bytes, and answers 200 with an empty ExportTraceServiceResponse. Exports are then
 * as real for the gateway as they get (serialisation, batching, one HTTP request per batch).
 */
export interface OtlpSinkInfo {
  url: string;
}

runChild(async () => {
  childOptions<Record<string, never>>();
  let exports = 0;
  let bytes = 0;
  const server = createServer((req, res) => {
    req.on('data', (c: Buffer) => (bytes += c.length));
    req.on('error', () => res.destroy());
    req.on('end', () => {
      exports++;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const info: OtlpSinkInfo = { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces` };
  return {
    info,
    // One line on stdout (the parent's log file) that proves the spans did arrive.
    close: async () => {
      process.stdout.write(`${JSON.stringify({ exports, bytes })}\n`);
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
});
