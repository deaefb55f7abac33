import { context, propagation, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span, type Tracer } from '@opentelemetry/api';

/**
 * The tracer while tracing is on, else undefined. Everything on the request path checks this one
 * variable first, so with tracing off no span, context or attribute object is ever built.
 */
let tracer: Tracer | undefined;

export function setActiveTracer(t: Tracer | undefined): void {
  tracer = t;
}

export function tracingOn(): boolean {
  return tracer !== undefined;
}

export function activeTracer(): Tracer | undefined {
  return tracer;
}

/** A client span around one upstream call, ended when the status line arrives or the call fails. */
export interface UpstreamSpan {
  answered(status: number): void;
  failed(err: { reason: string }): void;
}

/**
 * Starts the client span of an upstream call as a child of the current context (the request's
 * server span) and writes its W3C `traceparent` into `headers`, so the vendor's own traces join.
 * Only origin and path are recorded: query strings may carry credentials or signatures.
 */
export function startUpstreamSpan(
  method: string,
  url: URL,
  headers: Record<string, string>,
  target: { name: string; vendor: string } | undefined,
): UpstreamSpan | undefined {
  if (!tracer) return undefined;
  const attributes: Attributes = {
    'http.request.method': method,
    'server.address': url.hostname,
    'server.port': Number(url.port || (url.protocol === 'https:' ? 443 : 80)),
    'url.full': url.origin + url.pathname,
  };
  if (target) {
    attributes['gen_ai.system'] = target.vendor;
    attributes['gateway.upstream'] = target.name;
  }
  const parent = context.active();
  const span = tracer.startSpan(`${method} ${target?.name ?? url.hostname}`, { kind: SpanKind.CLIENT, attributes }, parent);
  propagation.inject(trace.setSpan(parent, span), headers);
  return {
    answered(status) {
      span.setAttribute('http.response.status_code', status);
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    },
    failed(err) {
      // The reason word only: transport messages can carry addresses or upstream text.
      span.setAttribute('error.type', err.reason);
      span.setStatus({ code: SpanStatusCode.ERROR, message: err.reason });
      span.end();
    },
  };
}

/**
 * Runs `fn` inside an internal span (a store transaction, a media fetch) when tracing is on; a
 * plain call otherwise.
 */
export function traced<T>(name: string, attributes: Attributes, fn: () => Promise<T>, kind: SpanKind = SpanKind.INTERNAL): Promise<T> {
  if (!tracer) return fn();
  return tracer.startActiveSpan(name, { kind, attributes }, async (span: Span) => {
    try {
      return await fn();
    } catch (e) {
      // The error's class only: messages of drivers and fetches can carry hosts, users or URLs.
      const type = (e as Error)?.name ?? 'Error';
      span.setAttribute('error.type', type);
      span.setStatus({ code: SpanStatusCode.ERROR, message: type });
      throw e;
    } finally {
      span.end();
    }
  });
}

/**
 * Adds GenAI semantic-convention attributes (gen_ai.request.model, gen_ai.usage.input_tokens ...)
 * to the current request's server span. The caller builds the attributes only when `tracingOn()`.
 */
export function annotateRequest(attributes: Attributes): void {
  trace.getActiveSpan()?.setAttributes(attributes);
}

export type { Context };
