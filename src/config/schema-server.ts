import { z } from 'zod';
import { timerMs } from './durations.js';
import { quoteValue } from './quote.js';

/** The config's `server` section: where the gateway listens, what it accepts, and how long it waits. */
export const serverSchema = z
  .object({
    host: z.string().default('127.0.0.1'),
    port: z.number().int().min(0).max(65535).default(8080),
    /** Base URL clients use to reach the gateway (for output_url); defaults to http://host:port. */
    public_url: z.string().url().optional(),
    body_limit_bytes: z.number().int().positive().default(10 * 1024 * 1024),
    /**
     * Request-body bytes held by requests in flight, process-wide; beyond it new requests get 503 overloaded.
     * Room for the largest video upload (50 MiB) with the base64 copy a create makes of it (4/3 more).
     */
    max_inflight_body_bytes: z.number().int().positive().default(128 * 1024 * 1024),
    /** Upstream answers read whole (embeddings, chat, vendor JSON, fetched media) held by requests in flight, process-wide. */
    max_inflight_answer_bytes: z.number().int().positive().default(256 * 1024 * 1024),
    /** Largest single upstream answer read whole; a larger one is refused with 502 `upstream_answer_too_large`. */
    max_answer_bytes: z.number().int().positive().default(64 * 1024 * 1024),
    request_timeout_ms: timerMs().positive().default(120_000),
    /** On SIGTERM, how long requests in flight get to finish before the process exits anyway. */
    shutdown_timeout_ms: timerMs().positive().default(25_000),
    /** A client that has not sent its full request head by then is answered 408 and closed (slow headers). */
    headers_timeout_ms: timerMs().positive().default(15_000),
    /**
     * An answer (a download, a chat stream, a whole JSON answer) whose client has taken no byte for this
     * long, its buffers full, is cut: its connection closed and what the request held given back.
     */
    download_stall_ms: timerMs().positive().default(60_000),
    /**
     * Client connections open at once; over it a new one is closed as it is accepted. Unset: 10,000,
     * or three quarters of the open-file limit when that is lower (http/connection-caps.ts).
     */
    max_connections: z.number().int().positive().optional(),
    /** Client connections open at once from one address (an IPv6 one by its /64), by the socket's own peer. */
    max_connections_per_address: z.number().int().positive().default(256),
    /** How long a connection with no request in flight is kept open for the client's next one. */
    keep_alive_timeout_ms: timerMs().positive().default(72_000),
    /** A request body of which no byte has arrived for this long is answered 408 and its connection closed. */
    body_stall_ms: timerMs().positive().default(30_000),
    /**
     * Which X-Forwarded-* entries to believe. The client address they give keys the sign-in limits, so
     * `true` (believe every entry, including those the client wrote itself) is refused: false (none,
     * the default), the number of proxies in front of the gateway, or those proxies' addresses/CIDRs.
     */
    trust_proxy: z
      .union([z.boolean(), z.number(), z.string(), z.array(z.string())])
      .superRefine((v, ctx) => {
        if (v === false) return;
        if (v === true) {
          ctx.addIssue({
            code: 'custom',
            message:
              'true would believe every X-Forwarded-For entry, including the ones a client writes itself, so any client could pick its own address; ' +
              'set the number of proxies in front of the gateway (e.g. 1) or their addresses (e.g. ["127.0.0.1"]), or false when clients connect directly',
          });
          return;
        }
        if (typeof v === 'number') {
          if (!Number.isInteger(v) || v < 1 || v > 16)
            ctx.addIssue({ code: 'custom', message: 'a hop count must be a whole number from 1 to 16 (the proxies in front of the gateway); false for none' });
          return;
        }
        const list = typeof v === 'string' ? v.split(',').map((a) => a.trim()) : v;
        if (list.length === 0) ctx.addIssue({ code: 'custom', message: 'list at least one proxy address, or set false' });
        list.forEach((a, i) => {
          const named = a === 'loopback' || a === 'linklocal' || a === 'uniquelocal';
          if (!named && !z.string().ip().safeParse(a).success && !z.string().cidr().safeParse(a).success)
            ctx.addIssue({
              code: 'custom',
              path: typeof v === 'string' ? [] : [i],
              message: `${quoteValue(a, false, 50)} is not an IP address, a CIDR range (10.0.0.0/8) or one of loopback, linklocal, uniquelocal`,
            });
        });
      })
      .transform((v): false | number | string[] => (typeof v === 'string' ? v.split(',').map((a) => a.trim()) : (v as false | number | string[])))
      .default(false),
  })
  .strict()
  .refine((s) => s.max_inflight_body_bytes >= s.body_limit_bytes, {
    message: 'must be at least server.body_limit_bytes (or no body of the largest accepted size could ever be received)',
    path: ['max_inflight_body_bytes'],
  })
  .refine((s) => s.max_inflight_answer_bytes >= s.max_answer_bytes, {
    message: 'must be at least server.max_answer_bytes (or no answer of the largest accepted size could ever be read)',
    path: ['max_inflight_answer_bytes'],
  })
  .default({});
