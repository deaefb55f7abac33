import { ConfigError, configSource } from '../config/load.js';
import { COMMON_UPSTREAM_KEYS } from '../config/schema-catalog.js';
import type { ConfigFile } from '../config/schema.js';
import { credentialFiles } from '../core/credential-files.js';
import type { JsonObject } from '../core/json.js';
import { configuredHosts } from '../core/redact.js';
import { toMicros, type Micros } from '../core/money.js';
import type { Upstream } from '../http/types.js';
import { resourceNamesOf } from '../protocols/resource-hosts.js';
import type { Account, ApiKeyRecord, KeyAction } from '../store/types.js';
import { CircuitBreaker } from './circuit.js';
import { globMatch } from './glob.js';

export type Capability = 'video' | 'embedding' | 'chat';

/** The key action that calls the endpoints of each capability. */
const ACTION_FOR: Readonly<Record<Capability, KeyAction>> = { video: 'video', embedding: 'embeddings', chat: 'chat' };

export interface ModelInfo {
  name: string;
  capabilities: Capability[];
  ownedBy: string;
  description?: string;
  price: { perSecond?: Micros; perMillionInput?: Micros; perMillionOutput?: Micros };
  /** A chat model's own output limit per choice (config `max_output_tokens`), when declared. */
  maxOutputTokens?: number;
}


/** Models, upstreams and the order in which upstreams are tried. Built once at start. */
export class Catalog {
  readonly models = new Map<string, ModelInfo>();
  readonly upstreams = new Map<string, Upstream>();
  private readonly modelMaps = new Map<string, Record<string, string>>();
  private readonly byModel = new Map<string, Upstream[]>();

  constructor(
    cfg: Pick<ConfigFile, 'models' | 'upstreams'>,
    readonly circuits = new CircuitBreaker(),
    private readonly random: () => number = Math.random,
  ) {
    const unreadable: string[] = [];
    for (const [i, u] of cfg.upstreams.entries()) {
      if (!u.enabled) continue;
      const options: JsonObject = {};
      for (const [k, v] of Object.entries(u)) if (!COMMON_UPSTREAM_KEYS.has(k)) options[k] = v as JsonObject[string];
      // Credential files are read now, once: the redaction of this upstream's text must hold their
      // secrets before its first call, and a file that cannot be read is a mistake to name at start.
      for (const [name, file] of credentialFiles(options))
        if ('error' in file) unreadable.push(`${configSource(cfg)}: upstreams[${i}].${name}: cannot read ${file.path} (${file.error})`);
      const up: Upstream = {
        name: u.name,
        vendor: u.vendor,
        baseUrl: u.base_url.replace(/\/+$/, ''),
        apiKey: u.api_key,
        models: u.models,
        priority: u.priority,
        weight: u.weight,
        timeoutMs: u.timeout_ms,
        options,
      };
      up.resourceNames = resourceNamesOf(configuredHosts(up));
      this.upstreams.set(up.name, up);
      if (u.model_map) this.modelMaps.set(up.name, u.model_map);
      for (const m of up.models) {
        const list = this.byModel.get(m) ?? [];
        list.push(up);
        this.byModel.set(m, list);
      }
    }
    if (unreadable.length) throw new ConfigError(['invalid configuration', ...unreadable].join('\n  '));
    for (const [name, m] of Object.entries(cfg.models)) {
      const owner = m.owned_by ?? this.byModel.get(name)?.[0]?.vendor ?? 'gateway';
      this.models.set(name, {
        name,
        capabilities: m.capabilities,
        ownedBy: owner,
        description: m.description,
        price: {
          perSecond: priceOf(name, 'per_second', m.price.per_second),
          perMillionInput: priceOf(name, 'per_million_input_tokens', m.price.per_million_input_tokens),
          perMillionOutput: priceOf(name, 'per_million_output_tokens', m.price.per_million_output_tokens),
        },
        maxOutputTokens: m.max_output_tokens,
      });
    }
  }

  model(name: string): ModelInfo | undefined {
    return this.models.get(name);
  }

  upstream(name: string): Upstream | undefined {
    return this.upstreams.get(name);
  }

  /** The model name an upstream expects (e.g. an Azure deployment), defaulting to the public name. */
  upstreamModel(up: Upstream, model: string): string {
    return this.modelMaps.get(up.name)?.[model] ?? model;
  }

  /** Every configured upstream serving `model`, whatever the account. */
  upstreamsOf(model: string): readonly Upstream[] {
    return this.byModel.get(model) ?? [];
  }

  /** Upstreams that serve `model` and are enabled for the account, ignoring circuit state. */
  servingUpstreams(model: string, account: Account): Upstream[] {
    const all = this.byModel.get(model) ?? [];
    return account.upstreams === null ? all : all.filter((u) => account.upstreams!.includes(u.name));
  }

  /**
   * Upstreams to try for a request, in order: lower priority first; within one priority a
   * weighted random order; upstreams whose circuit is open go last (tried only if all else fails).
   */
  candidates(model: string, account: Account): Upstream[] {
    const serving = this.servingUpstreams(model, account);
    const open: Upstream[] = [];
    const closed: Upstream[] = [];
    for (const u of serving) (this.circuits.isOpen(u.name) ? open : closed).push(u);
    // `closed` is this call's own array, so it can be handed back as it is when nothing follows it.
    const first = this.order(closed);
    return open.length === 0 ? first : [...first, ...this.order(open)];
  }

  /**
   * Models the account (through its enabled upstreams) and the key (through its model patterns and
   * its actions: a model none of whose capabilities' endpoints the key may call is of no use to it)
   * may use.
   */
  visibleModels(account: Account, key: ApiKeyRecord): ModelInfo[] {
    const out: ModelInfo[] = [];
    for (const m of this.models.values()) {
      if (!key.models.some((g) => globMatch(g, m.name))) continue;
      if (!m.capabilities.some((c) => key.actions.includes(ACTION_FOR[c]))) continue;
      if (this.servingUpstreams(m.name, account).length === 0) continue;
      out.push(m);
    }
    return out;
  }

  private order(list: Upstream[]): Upstream[] {
    // One upstream (the usual model) has one order: no grouping, nothing allocated per request.
    if (list.length < 2) return list;
    const byPriority = new Map<number, Upstream[]>();
    for (const u of list) byPriority.set(u.priority, [...(byPriority.get(u.priority) ?? []), u]);
    const out: Upstream[] = [];
    for (const p of [...byPriority.keys()].sort((a, b) => a - b)) out.push(...this.weightedShuffle(byPriority.get(p)!));
    return out;
  }

  /** Efraimidis-Spirakis: key = u^(1/w); sorting by key descending samples without replacement by weight. */
  private weightedShuffle(list: Upstream[]): Upstream[] {
    if (list.length < 2) return list;
    return list
      .map((u) => ({ u, k: Math.pow(this.random() || Number.MIN_VALUE, 1 / u.weight) }))
      .sort((a, b) => b.k - a.k)
      .map((x) => x.u);
  }
}

/** A configured price in micros; a price that cannot be held exactly stops the start, naming its key. */
function priceOf(model: string, key: string, amount: number | string | undefined): number | undefined {
  if (amount === undefined) return undefined;
  try {
    return toMicros(amount);
  } catch (e) {
    throw new Error(`models.${model}.price.${key}: ${e instanceof Error ? e.message : String(e)}`);
  }
}
