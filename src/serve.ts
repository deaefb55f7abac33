import { buildApp } from './app.js';
import { loadConfigFile } from './config/load.js';
import type { ConfigFile } from './config/schema.js';
import { join } from 'node:path';
import { startBanner } from './banner.js';
import { closeErrorText, StartRollback } from './core/start-rollback.js';
import { closeListener } from './http/close-listener.js';
import { listenerUrl } from './http/listener-url.js';
import { ensureDemoKey, startDemo, type Demo } from './demo.js';
import { startMetricsListener } from './ops/routes.js';
import { buildServices, type Services } from './services.js';
import { handleShutdownSignals, shutdownTimeoutWarning } from './shutdown.js';

/**
 * Runs the gateway until SIGINT/SIGTERM/SIGHUP, then drains (see shutdown.ts). With no config file:
 * the embedded default (simulators, SQLite in ./data, a demo account and key). The start banner
 * goes to stderr: stdout is the JSON log stream.
 */
export async function serve(opts: { configPath?: string; host?: string; port?: string }): Promise<void> {
  const host = opts.host ?? process.env.HOST;
  // Checked before anything starts: nothing is left running when it is wrong.
  const port = portNumber(opts.port ?? process.env.PORT);
  // What start-up has opened so far, closed in reverse should a later step fail: a simulator
  // listening or a PostgreSQL pool (whose kept connections never time out) would otherwise keep the
  // process alive serving nothing, after the error was printed. The error printed is the one that
  // stopped the start; one met while closing is a line of its own.
  const opened = new StartRollback((what, e) => process.stderr.write(`while stopping after the failed start, closing ${what} failed: ${closeErrorText(e)}\n`));
  await opened.guard(async () => {
    let demo: Demo | undefined;
    let cfg: ConfigFile;
    if (opts.configPath) cfg = loadConfigFile(opts.configPath);
    else {
      demo = await startDemo({ host: host ?? '127.0.0.1', port: port ?? 8080, dataDir: './data' });
      const sims = demo.sims;
      opened.add('the simulators', () => Promise.all(sims.map((s) => s.close())));
      cfg = demo.config;
    }
    if (host) cfg.server.host = host;
    if (port !== undefined) cfg.server.port = port;
    const services = await buildServices(cfg);
    opened.add('the services', () => services.close());
    // Which settings a listener's error names: the ones given to this command, else the config's.
    const own = { host: host ? 'HOST / --host' : 'server.host', port: port !== undefined ? 'PORT / --port' : 'server.port' };
    await run({ cfg, services, demo, own }, opened);
  });
}

/** The PORT setting as a port number; undefined when not set. */
function portNumber(port: string | undefined): number | undefined {
  if (!port) return undefined;
  const p = Number(port);
  if (!Number.isInteger(p) || p < 0 || p > 65535) throw new Error(`PORT: '${port}' is not a port number`);
  return p;
}

interface Startup {
  cfg: ConfigFile;
  services: Services;
  demo: Demo | undefined;
  own: { host: string; port: string };
}

/** Listens, then serves until a signal's drain is done. What it opens goes on `opened`, for serve to close if it fails. */
async function run({ cfg, services, demo, own }: Startup, opened: StartRollback): Promise<void> {
  // Info, not a warning: the default upstream timeout (30 s) already reaches past the default cut
  // (24 s), and a drain rarely meets a call that slow; the line says what such a call costs.
  const slowUpstreams = shutdownTimeoutWarning(cfg);
  if (slowUpstreams) services.logger.info(slowUpstreams);
  // The embedded simulators live in this process: their large answers count against its memory budget.
  for (const sim of demo?.sims ?? []) sim.memory = services.executor.answers.budget;
  const app = buildApp(services);
  // Installed before listening, so a signal during start-up drains too instead of killing the process.
  let metricsApp: Awaited<ReturnType<typeof startMetricsListener>> | undefined;
  const closeServices = async () => {
    // Prometheus keeps its connection open between scrapes: one answered while this closes would
    // otherwise hold the exit until its keep-alive timeout, past the drain deadline.
    if (metricsApp) await closeListener(metricsApp);
    await services.close();
    await Promise.all((demo?.sims ?? []).map((s) => s.close()));
  };
  const stopped = handleShutdownSignals({
    app,
    state: services.shutdown,
    logger: services.logger,
    deadlineMs: cfg.server.shutdown_timeout_ms,
    stopBackground: async () => {
      // Vendor polls in flight are cut short, not waited for (VideoService.stopRefreshes).
      services.video.stopRefreshes();
      await Promise.all([services.poller.stop(), services.video.stopCallbacks(), services.webhooks.dispatcher.stop()]);
    },
    closeServices,
  });
  // A port already taken, say: what listens is closed before the services under it.
  opened.add('the listeners', async () => {
    if (metricsApp) await closeListener(metricsApp);
    await app.close();
  });
  await app.listen({ host: cfg.server.host, port: cfg.server.port }).catch((e: unknown) => {
    throw cannotListen(e, own, cfg.server.host, cfg.server.port);
  });
  // At once, before any request is served: with port 0 the OS chose it.
  const addr = app.server.address();
  const boundPort = typeof addr === 'object' && addr ? addr.port : cfg.server.port;
  services.listening(boundPort);
  const m = cfg.metrics;
  metricsApp =
    m.enabled && m.port !== undefined
      ? await startMetricsListener(services, m.host, m.port).catch((e: unknown) => {
          throw cannotListen(e, { host: 'metrics.host', port: 'metrics.port' }, m.host, m.port!);
        })
      : undefined;
  services.poller.start();
  services.webhooks.dispatcher.start();
  const base = listenerUrl(cfg.server.host, boundPort);
  const demoInfo = demo
    ? { keyFile: join(cfg.data_dir, 'demo-key'), key: await ensureDemoKey(services.admin, cfg.data_dir), models: [...services.catalog.models.keys()] }
    : undefined;
  services.logger.info({ url: base }, 'gateway listening');
  process.stderr.write(
    startBanner({
      base,
      adminTokenFile: cfg.admin_token === undefined ? join(cfg.data_dir, 'admin-token') : undefined,
      demo: demoInfo,
      showKey: process.stdout.isTTY === true,
      hasDocs: app.hasRoute({ method: 'GET', url: '/docs' }),
      hasConsole: app.hasRoute({ method: 'GET', url: '/console' }),
    }),
  );
  // Started: from here on a signal's drain closes everything.
  opened.release();
  await stopped;
  // Everything is closed; a handle some library forgot must not keep a stopped gateway alive.
  setTimeout(() => process.exit(0), 2_000).unref();
}

/**
 * A listener that could not start, named by the setting to change and the address it tried: Node's
 * "listen EADDRINUSE: address already in use 127.0.0.1:8080" says neither which setting nor (for
 * the metrics port) which listener.
 */
function cannotListen(e: unknown, settings: { host: string; port: string }, host: string, port: number): Error {
  const code = (e as NodeJS.ErrnoException)?.code;
  const address = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  const why =
    code === 'EADDRINUSE'
      ? [settings.port, 'another process is listening on it']
      : code === 'EACCES'
        ? [settings.port, 'not permitted (ports below 1024 need privileges)']
        : code === 'EADDRNOTAVAIL'
          ? [settings.host, 'the address is not one of this host']
          : code === 'ENOTFOUND' || code === 'EAI_AGAIN'
            ? [settings.host, 'the host name does not resolve']
            : [`${settings.host}, ${settings.port}`, (e as Error)?.message ?? String(e)];
  const tag = code && !why[1]!.includes(code) ? ` (${code})` : '';
  return new Error(`${why[0]}: cannot listen on ${address}: ${why[1]}${tag}`, { cause: e });
}
