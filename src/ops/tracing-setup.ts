import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Span } from '@opentelemetry/api';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { activeTracer, setActiveTracer } from './tracing.js';

export interface TracingConfig {
  enabled: boolean;
  /** OTLP/HTTP traces URL (e.g. http://collector:4318/v1/traces); else the OTEL_EXPORTER_OTLP_* variables. */
  endpoint?: string;
  service_name: string;
  sample_ratio: number;
}

export interface TracingHandle {
  shutdown(): Promise<void>;
}

/**
 * Tracing is on when the config says so or the standard OTLP endpoint variables are set, and
 * OTEL_SDK_DISABLED / OTEL_TRACES_EXPORTER=none do not turn it off.
 */
export function tracingWanted(cfg: TracingConfig, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED === 'true' || env.OTEL_TRACES_EXPORTER === 'none') return false;
  return cfg.enabled || Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/**
 * Starts the official OpenTelemetry SDK (AsyncLocalStorage context, W3C trace-context propagator,
 * batched OTLP/HTTP export) when wanted; otherwise does nothing and returns undefined. `exporter`
 * replaces OTLP (tests pass an in-memory one, exported span by span). The SDK is imported only
 * then: a gateway without tracing does not hold its modules (about 15 MB of RSS).
 */
export async function startTracing(cfg: TracingConfig, opts: { exporter?: SpanExporter; env?: NodeJS.ProcessEnv } = {}): Promise<TracingHandle | undefined> {
  const env = opts.env ?? process.env;
  if (!opts.exporter && !tracingWanted(cfg, env)) return undefined;
  const [{ OTLPTraceExporter }, { resourceFromAttributes }, { BatchSpanProcessor, ParentBasedSampler, SimpleSpanProcessor, TraceIdRatioBasedSampler }, { NodeTracerProvider }] =
    await Promise.all([
      import('@opentelemetry/exporter-trace-otlp-http'),
      import('@opentelemetry/resources'),
      import('@opentelemetry/sdk-trace-base'),
      import('@opentelemetry/sdk-trace-node'),
    ]);
  const processor = opts.exporter
    ? new SimpleSpanProcessor(opts.exporter)
    : new BatchSpanProcessor(new OTLPTraceExporter(cfg.endpoint ? { url: cfg.endpoint } : {}));
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME ?? cfg.service_name }),
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(cfg.sample_ratio) }),
    spanProcessors: [processor],
  });
  provider.register();
  setActiveTracer(provider.getTracer('video-embeddings-gateway'));
  return {
    async shutdown() {
      setActiveTracer(undefined);
      await provider.shutdown();
      // Unregister the globals so a later start in the same process (tests) can register again.
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}

const SPAN = Symbol('serverSpan');
type Traced = FastifyRequest & { [SPAN]?: { span: Span; ctx: Context } };

/**
 * A server span per request, continuing the caller's trace when it sends `traceparent`. The span's
 * context is made current for the hooks and for the handler (and everything it awaits), so
 * upstream calls, media fetches and store transactions become its children.
 * Installed only when tracing is on: with it off the app has none of these hooks.
 */
export function installServerSpans(app: FastifyInstance): void {
  const tracer = activeTracer();
  if (!tracer) return;
  app.addHook('onRequest', (req, _reply, done) => {
    const parent = propagation.extract(ROOT_CONTEXT, req.headers);
    const route = req.routeOptions.url;
    const span = tracer.startSpan(
      route ? `${req.method} ${route}` : req.method,
      {
        kind: SpanKind.SERVER,
        attributes: {
          'http.request.method': req.method,
          'http.route': route ?? '',
          'url.path': req.url.split('?')[0],
          'gateway.request_id': req.id,
        },
      },
      parent,
    );
    const ctx = trace.setSpan(parent, span);
    (req as Traced)[SPAN] = { span, ctx };
    context.with(ctx, done);
  });
  // The body is parsed between onRequest and preHandler, outside any context: enter it again.
  app.addHook('preHandler', (req, _reply, done) => {
    const s = (req as Traced)[SPAN];
    if (s) context.with(s.ctx, done);
    else done();
  });
  app.addHook('onResponse', (req, reply, done) => {
    const s = (req as Traced)[SPAN];
    if (s) {
      s.span.setAttribute('http.response.status_code', reply.statusCode);
      if (reply.statusCode >= 500) s.span.setStatus({ code: SpanStatusCode.ERROR });
      s.span.end();
    }
    done();
  });
  // A client that hangs up gets no onResponse; the span still ends, marked as such.
  app.addHook('onRequestAbort', (req, done) => {
    const s = (req as Traced)[SPAN];
    if (s) {
      s.span.setStatus({ code: SpanStatusCode.ERROR, message: 'client closed the connection' });
      s.span.end();
    }
    done();
  });
}
