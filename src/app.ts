import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';

import { randomUUID } from 'node:crypto';
import { errors, type GatewayError } from './core/errors.js';
import { BodyBudget, installBodyBudget } from './http/body-budget.js';
import { installRequestLifecycle } from './http/lifecycle.js';
import { answerUnmetExpectations } from './http/expect.js';
import { keepFlushingAnswers } from './http/flushing-answers.js';
import { closeWithoutLingering, installLingeringClose } from './http/linger.js';
import { cutStalledAnswers } from './http/write-stall.js';
import { capConnections, defaultMaxConnections } from './http/connection-caps.js';
import { connectionsRefused } from './ops/metrics.js';
import { installJsonParser } from './http/json-depth.js';
import { countAnswerBeforeRouting, installHttpMetrics } from './ops/http-metrics.js';
import { registerOpenApi } from './ops/openapi.js';
import { REQUEST_ID_HEADER, requestIdFor } from './ops/request-id.js';
import { AccessLog, lazyRequestLogger } from './ops/request-logger.js';
import { registerOpsRoutes } from './ops/routes.js';
import { installServerSpans } from './ops/tracing-setup.js';
import { clientHungUp, logError, sendError, toGatewayError } from './http/render.js';
import { answerClientError } from './http/client-error.js';
import type { Services } from './services.js';
import { registerAdminRoutes } from './routes/admin.js';
import { registerCallbackRoutes } from './routes/callbacks.js';
import { registerChatRoutes } from './routes/chat.js';
import { registerEmbeddingsRoutes } from './routes/embeddings.js';
import { registerIndexRoute } from './routes/index.js';
import { registerModelRoutes } from './routes/models.js';
import { registerVideoRoutes } from './routes/videos.js';
import { registerUsageRoutes } from './routes/usage.js';
import { registerOpenAiVideoRoutes } from './routes/openai-videos.js';
import { registerFileRoutes } from './routes/files.js';
import { installRequestGate } from './auth/request-gate.js';
import { registerConsoleRoutes } from './console/routes.js';
import { SessionStore } from './console/sessions.js';
import { SignInLimiter } from './console/sign-in-limit.js';
import { clientJson } from './core/lossless-json.js';
import './auth/types.js';

export interface RegisteredRoute {
  method: string;
  url: string;
  /** Left out of the OpenAPI document on purpose (the docs page's own assets). */
  hidden: boolean;
}

declare module 'fastify' {
  interface FastifyInstance {
    routeTable: readonly RegisteredRoute[];
  }
}

/** The refusal of a query parameter sent more than once, or undefined (no parameter is repeated). */
function repeatedQueryParameter(q: Record<string, unknown> | undefined): GatewayError | undefined {
  // for-in, not Object.entries: most requests have no query at all, and this allocates nothing.
  for (const name in q)
    if (Array.isArray(q[name])) return errors.invalidRequest(`Query parameter '${name.slice(0, 100)}' is repeated; send it once.`, name.slice(0, 100), 'repeated_parameter');
  return undefined;
}

/** Routes that answer during a drain (probes and metrics), unlike every other. */
const DRAIN_PROBES = new Set(['/health', '/ready', '/metrics']);

/** Builds the HTTP app from the services; no business logic lives here. */
export function buildApp(s: Services): FastifyInstance {
  const { server } = s.config;
  const accessLog = new AccessLog(s.logger as FastifyBaseLogger);
  const app = Fastify({
    loggerInstance: s.logger as FastifyBaseLogger,
    bodyLimit: server.body_limit_bytes,
    // Fastify reads a bare number as "trust nothing", so a hop count is given as "trust the nearest N hops".
    trustProxy: typeof server.trust_proxy === 'number' ? ((hops: number) => (_address: string, hop: number) => hop < hops)(server.trust_proxy) : server.trust_proxy,
    logController: accessLog,
    // req.log is made only when a request logs through it; the access line needs none.
    childLoggerFactory: lazyRequestLogger,
    // Fastify's own drain answer is a 503 outside the error shape; the first onRequest hook below
    // refuses requests that arrive during a drain instead (503 shutting_down).
    return503OnClosing: false,
    // How long an idle connection waits for its next request (Fastify's own default, 72 s, unless set).
    keepAliveTimeout: server.keep_alive_timeout_ms,
    // Slow headers (a client trickling its request head to hold a connection) are cut off; Node
    // checks every 30 s by default, which would let the timeout run far past its value.
    // Node's own whole-request timeout stays off, as Fastify sets it once the server exists (0, its
    // `requestTimeout` default): server.request_timeout_ms is enforced by the request lifecycle,
    // which answers in the error shape. Given here too, because Node checks headersTimeout <=
    // requestTimeout when the server is made, against its 300 s default when none is given, and
    // refused any headers_timeout_ms above that whatever request_timeout_ms said.
    // Node's own refusal of an HTTP/1.1 request without Host is a bare 400 with neither the error
    // shape nor an x-request-id: the check is made by the first hook below instead.
    http: {
      requestTimeout: 0,
      headersTimeout: server.headers_timeout_ms,
      connectionsCheckingInterval: Math.min(1_000, server.headers_timeout_ms),
      requireHostHeader: false,
    },
    // x-request-id: the client's own when sane, else a new one; logged on every line as request_id.
    genReqId: requestIdFor,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 4096 },
    // Requests the HTTP parser refuses (e.g. a duplicated Authorization header, bad framing)
    // still get the spec's error shape.
    // Framework-level refusals (e.g. a malformed %-escape in the path) in the spec's shape too.
    frameworkErrors: (err, req, reply) => {
      reply.header(REQUEST_ID_HEADER, req.id ?? randomUUID());
      // Refused before routing, where Fastify writes no access line and runs no hook: the answer's
      // end writes the line and counts the answer in the request metrics.
      reply.raw.once('finish', () => accessLog.requestCompleted(null, req, reply));
      countAnswerBeforeRouting(req, reply);
      void sendError(reply, errors.invalidRequest(`Malformed request: ${err.message}`, undefined, 'malformed_request'));
    },
    clientErrorHandler: answerClientError,
  });

  // Every route as registered (any plugin, any time before start), for the OpenAPI completeness test
  // and anyone who needs the route list without parsing printRoutes().
  const routeTable: RegisteredRoute[] = [];
  app.decorate('routeTable', routeTable);
  app.addHook('onRoute', (r) => {
    for (const method of [r.method].flat()) routeTable.push({ method, url: r.url, hidden: r.schema?.hide === true });
  });

  // First hook of all: every answer carries the id, whichever path writes it (errors, 404s, 408s,
  // hijacked streams), because it goes on the raw response before anything else runs. Then a
  // repeated query parameter, which arrives as an array no route expects, is refused for every
  // route, before any hook or handler reads the query. (Callback hooks throughout the per-request
  // path: an async hook costs a promise and a microtask hop on every request.)
  app.addHook('onRequest', (req, reply, done) => {
    reply.raw.setHeader(REQUEST_ID_HEADER, req.id);
    // Draining (SIGTERM): a request on a connection that was already open starts no new work. The
    // connection closes after this answer, so the client's retry goes to another instance.
    // The probes still answer: /ready says "failing: shutting down" to the load balancer, /health
    // and /metrics what they always say.
    if (s.shutdown.isShuttingDown() && !DRAIN_PROBES.has(req.routeOptions.url ?? '')) {
      reply.raw.setHeader('connection', 'close');
      return done(errors.shuttingDown());
    }
    if (req.headers.host === undefined && req.raw.httpVersion === '1.1') {
      // RFC 9112 3.2: a 1.1 request without Host is refused, and its connection closed as Node's
      // refusal did (the hook runs before the head's last byte is marked read, so no lingering).
      closeWithoutLingering(reply.raw);
      return done(errors.invalidRequest('Malformed HTTP request: an HTTP/1.1 request must carry a Host header.', 'host', 'malformed_request'));
    }
    done(repeatedQueryParameter(req.query as Record<string, unknown> | undefined));
  });
  installServerSpans(app);
  installHttpMetrics(app);

  // Every JSON answer: a video vendor's numbers a double cannot hold, kept as markers since they
  // were read (a job's vendor_data), are written back as the vendor wrote them (core/lossless-json.ts).
  // Without a marker in the text this costs one `includes` over what JSON.stringify made anyway.
  app.setReplySerializer((payload) => clientJson(payload));
  app.setErrorHandler((err, req, reply) => {
    // No one to answer: the connection's close already wrote the access line (499).
    if (clientHungUp(req, err)) return;
    // A route's own body limit (the console sign-in's, a callback's) is the one a 413 names.
    const rendered = toGatewayError(err, req.routeOptions.bodyLimit ?? server.body_limit_bytes);
    logError(req, err, rendered);
    if (reply.sent || reply.raw.headersSent) return;
    return sendError(reply, rendered);
  });
  app.setNotFoundHandler((req, reply) => sendError(reply, errors.notFound(`No route for ${req.method} ${req.url.split('?')[0]}.`, 'route_not_found')));

  installRequestLifecycle(app, server.request_timeout_ms, (reply) => accessLog.requestAborted(reply), server.body_stall_ms);
  installBodyBudget(app, new BodyBudget(server.max_inflight_body_bytes), server.body_limit_bytes);
  installLingeringClose(app);
  // Before any other connection listener: a connection over a cap is gone before they watch it.
  capConnections(
    app.server,
    { total: server.max_connections ?? defaultMaxConnections(), perAddress: server.max_connections_per_address },
    s.logger,
    (reason) => connectionsRefused.inc({ reason }),
  );
  answerUnmetExpectations(app.server);
  // A drain must not cut an answer whose last bytes are still on their way to a slow reader...
  keepFlushingAnswers(app.server);
  // ...but a reader that takes nothing at all must not hold its request's memory for good.
  cutStalledAnswers(app.server, server.download_stall_ms);

  // Bodies nested deeper than any API needs are refused before they are parsed.
  installJsonParser(app);
  // No route takes text: without this Fastify hands a text/plain body over as a string, which each
  // route would refuse in words of its own instead of the documented 400 unsupported_media_type.
  app.removeContentTypeParser('text/plain');

  // Console sessions (cookie) stand in for the bearer credential on /v1 and /admin, then every
  // matched /v1 route needs a bearer key (or, where the route allows it, a signed link).
  const sessions = new SessionStore(() => s.clock.now());
  installRequestGate(app, { sessions, authenticator: s.authenticator, video: s.video });

  // The OpenAPI plugin loads first, so that it sees every route registered after it (in the plugin
  // below, and any added later by other plugins).
  app.register(registerOpenApi);
  // One count of wrong credentials per client address, wherever the admin token is tried: the
  // console sign-in, /admin and /metrics. Three limiters would allow three times the guesses.
  const signInLimiter = new SignInLimiter(() => s.clock.now());
  app.register(async (api) => {
    registerIndexRoute(api);
    registerOpsRoutes(api, {
      limiter: signInLimiter,
      readiness: s.readiness,
      store: s.store,
      catalog: s.catalog,
      adminToken: s.config.admin_token,
      metricsHere: s.config.metrics.enabled && s.config.metrics.port === undefined,
    });
    registerModelRoutes(api, { catalog: s.catalog, startedAt: s.startedAt, videoCapabilities: s.video.deps.capabilities });
    registerVideoRoutes(api, { authorizer: s.authorizer, video: s.video, downloadStallMs: server.download_stall_ms });
    registerOpenAiVideoRoutes(api, { authorizer: s.authorizer, video: s.video, downloadStallMs: server.download_stall_ms });
    registerFileRoutes(api, { files: s.video.deps.files, limits: s.video.deps, downloadStallMs: server.download_stall_ms });
    registerCallbackRoutes(api, { video: s.video, shutdown: s.shutdown });
    registerEmbeddingsRoutes(api, { authorizer: s.authorizer, embeddings: s.embeddings });
    registerChatRoutes(api, { authorizer: s.authorizer, chat: s.chat });
    registerAdminRoutes(api, { admin: s.admin, store: s.store, adminToken: s.config.admin_token, clock: s.clock, webhooks: s.webhooks.admin, video: s.video, catalog: s.catalog, limiter: signInLimiter });
    registerUsageRoutes(api, { store: s.store, clock: s.clock });
    registerConsoleRoutes(api, { sessions, limiter: signInLimiter, authenticator: s.authenticator, adminToken: s.config.admin_token, clock: s.clock });
  });
  return app;
}
