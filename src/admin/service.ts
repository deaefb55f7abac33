import { randomUUID } from 'node:crypto';
import { displayPrefix, generateKey, hashKey } from '../auth/keys.js';
import type { Clock } from '../core/clock.js';
import { errors } from '../core/errors.js';
import { formatMicros, MAX_MICROS, MoneyFormatError, parseMoney, type Micros } from '../core/money.js';
import type { Catalog } from '../routing/catalog.js';
import type { Account, ApiKeyRecord, KeyAction, KeyBudget, KeyListPage, LedgerEntry, LedgerFilter, RateLimits, Store } from '../store/types.js';

export const ALL_ACTIONS: readonly KeyAction[] = ['video', 'embeddings', 'chat', 'models'];

/** Parses "30d", "12h", "45m", "3600s" into milliseconds. */
/** The longest a key may be set to live: a hundred years (its expiry must stay a date the store and JSON can hold). */
export const MAX_KEY_LIFETIME_MS = 100 * 365 * 86_400_000;

export function parseDuration(text: string): number {
  const m = /^(\d{1,15})\s*([smhdw])$/.exec(text.trim());
  if (!m) throw errors.invalidRequest(`'${text.slice(0, 40)}' is not a duration like 30d, 12h or 45m.`, 'expires');
  const unit = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 }[m[2] as 's' | 'm' | 'h' | 'd' | 'w'];
  const ms = Number(m[1]) * unit;
  if (!(ms > 0) || ms > MAX_KEY_LIFETIME_MS) throw errors.invalidRequest(`'${text.slice(0, 40)}' is not a key lifetime between 1s and 100 years.`, 'expires');
  return ms;
}

/** An amount taken by the admin API, the CLI or the console (rules: core/money.ts parseMoney); a 400 naming `param` otherwise. */
export function parseAmount(v: unknown, param: string): Micros {
  try {
    return parseMoney(v);
  } catch (e) {
    if (e instanceof MoneyFormatError) throw errors.invalidRequest(`'${param}' ${e.message}.`, param);
    throw e;
  }
}

/** A key budget as the CLI and admin API take it: amounts in currency units. */
export interface BudgetInput {
  total?: number | string | null;
  period?: 'day' | 'month' | null;
  period_limit?: number | string | null;
}

export function parseBudget(b: BudgetInput | null | undefined): KeyBudget | null {
  if (!b) return null;
  const total = b.total === undefined || b.total === null ? null : parseAmount(b.total, 'budget.total');
  const periodLimit = b.period_limit === undefined || b.period_limit === null ? null : parseAmount(b.period_limit, 'budget.period_limit');
  const period = b.period ?? null;
  if (period !== null && period !== 'day' && period !== 'month') throw errors.invalidRequest("'budget.period' must be 'day' or 'month'.", 'budget.period');
  if ((period === null) !== (periodLimit === null))
    throw errors.invalidRequest("'budget.period' and 'budget.period_limit' go together.", period === null ? 'budget.period' : 'budget.period_limit');
  if (total === null && period === null) throw errors.invalidRequest("A budget needs 'total' or 'period' with 'period_limit'.", 'budget');
  return { total, period, periodLimit };
}

/** Page size of the key list: by default, and the most one page may hold. */
export const KEY_LIST_DEFAULT_LIMIT = 100;
export const KEY_LIST_MAX_LIMIT = 1000;

export interface KeyListQuery {
  /** Account name: only its keys. */
  account?: string;
  /** Id of the last key of the previous page. */
  after?: string;
  limit?: number;
  order?: 'asc' | 'desc';
}

export interface NewKeyInput {
  account: string;
  models?: string[];
  actions?: KeyAction[];
  expires?: string;
  name?: string;
  limits?: RateLimits;
  budget?: BudgetInput | null;
}

/** Account and key operations, shared by the CLI and the admin HTTP API. */
export class AdminService {
  constructor(
    readonly store: Store,
    private readonly catalog: Catalog | undefined,
    private readonly clock: Clock,
    /** Called after a change that cached auth answers must see at once (revocation). */
    private readonly onChange: () => void = () => undefined,
  ) {}

  async createAccount(name: string, opts: { balance?: unknown; upstreams?: string[] | null; limits?: RateLimits } = {}): Promise<Account> {
    if (!/^[A-Za-z0-9._-]{1,64}$/.test(name)) throw errors.invalidRequest('Account names use 1-64 letters, digits, dot, dash or underscore.', 'name');
    // The name is a path segment (/admin/accounts/{name}): every URL client resolves '.' and '..' away.
    if (name === '.' || name === '..') throw errors.invalidRequest("An account cannot be named '.' or '..': no URL could name it.", 'name');
    if (await this.store.getAccountByName(name)) throw errors.invalidRequest(`An account named '${name}' already exists.`, 'name', 'already_exists');
    const upstreams = opts.upstreams ?? null;
    if (upstreams && this.catalog) {
      for (const u of upstreams) if (!this.catalog.upstream(u)) throw errors.invalidRequest(`Unknown upstream '${u}'.`, 'upstreams');
    }
    const balance = opts.balance === undefined ? 0 : parseAmount(opts.balance, 'balance');
    return this.store.createAccount({ name, balance, upstreams, limits: opts.limits ?? {}, now: this.clock.now() });
  }

  listAccounts(): Promise<Account[]> {
    return this.store.listAccounts();
  }

  async account(name: string): Promise<Account> {
    const a = await this.store.getAccountByName(name);
    if (!a) throw errors.notFound(`No account named '${name}'.`, 'account_not_found');
    return a;
  }

  async topUp(name: string, amount: unknown, note?: string): Promise<Account> {
    const a = await this.account(name);
    const micros = parseAmount(amount, 'amount');
    if (micros === 0) throw errors.invalidRequest("'amount' must be greater than zero.", 'amount');
    // A balance past MAX_MICROS could not be read back exactly; the store would refuse the sum with a 500.
    const tooMuch = (balance: Micros) =>
      errors.invalidRequest(
        `'amount' would take the balance past ${formatMicros(MAX_MICROS)}, the most an account can hold (it holds ${formatMicros(balance)}).`,
        'amount',
      );
    if (a.balance > MAX_MICROS - micros) throw tooMuch(a.balance);
    let updated: Account;
    try {
      updated = await this.store.topUp(a.id, micros, note ?? null, this.clock.now());
    } catch (e) {
      // Another top-up can land between the check above and this one's write: the store then refuses
      // (and rolls back) the sum, which is the same refusal as above, not a server error.
      const current = await this.store.getAccount(a.id);
      if (current && current.balance > MAX_MICROS - micros) throw tooMuch(current.balance);
      throw e;
    }
    this.onChange();
    return updated;
  }

  async ledger(name: string, filter: LedgerFilter = {}): Promise<LedgerEntry[]> {
    const a = await this.account(name);
    return this.store.listLedger(a.id, filter);
  }

  /** Changes which upstreams serve the account (null: all) and its rate limits. */
  async updateAccount(name: string, patch: { upstreams?: string[] | null; limits?: RateLimits }): Promise<Account> {
    const a = await this.account(name);
    if (patch.upstreams && this.catalog) {
      for (const u of patch.upstreams) if (!this.catalog.upstream(u)) throw errors.invalidRequest(`Unknown upstream '${u}'.`, 'upstreams');
    }
    const updated = await this.store.updateAccount(a.id, patch);
    if (!updated) throw errors.notFound(`No account named '${name}'.`, 'account_not_found');
    // Cached authentications carry the account (its upstreams and limits): let them see the change.
    this.onChange();
    return updated;
  }

  async createKey(input: NewKeyInput): Promise<{ key: string; record: ApiKeyRecord }> {
    const a = await this.account(input.account);
    const actions = input.actions ?? [...ALL_ACTIONS];
    for (const act of actions) if (!ALL_ACTIONS.includes(act)) throw errors.invalidRequest(`Unknown action '${act}'.`, 'actions');
    const models = input.models && input.models.length > 0 ? input.models : ['*'];
    const budget = parseBudget(input.budget);
    for (const m of models) if (!/^[A-Za-z0-9._:/*?-]{1,200}$/.test(m)) throw errors.invalidRequest(`Bad model pattern '${m}'.`, 'models');
    const now = this.clock.now();
    const key = generateKey();
    const record = await this.store.createKey({
      id: randomUUID(),
      accountId: a.id,
      hash: hashKey(key),
      prefix: displayPrefix(key),
      name: input.name ?? null,
      models,
      actions,
      limits: input.limits ?? {},
      expiresAt: input.expires ? now + parseDuration(input.expires) : null,
      createdAt: now,
      budget,
    });
    return { key, record };
  }

  /**
   * A key by its id, else by its display prefix (both looked up by index). A prefix is only 6 random
   * characters, so two keys can share one: then the caller must use the id (400 `ambiguous_key`).
   */
  async findKey(idOrPrefix: string): Promise<ApiKeyRecord> {
    const byId = await this.store.getKey(idOrPrefix);
    if (byId) return byId;
    const matches = await this.store.keysByPrefix(idOrPrefix, 2);
    const shown = idOrPrefix.slice(0, 100);
    if (matches.length === 0) throw errors.notFound(`No key '${shown}'.`, 'key_not_found');
    if (matches.length > 1) throw errors.invalidRequest(`The prefix '${shown}' matches several keys; use the key's id.`, 'key', 'ambiguous_key');
    return matches[0]!;
  }

  /** Sets or (with null) removes a key's budget; spend counters restart from the ledger. */
  async setKeyBudget(idOrPrefix: string, input: BudgetInput | null): Promise<ApiKeyRecord> {
    const k = await this.findKey(idOrPrefix);
    await this.store.setKeyBudget(k.id, parseBudget(input));
    // Cached authentications carry the key record: let them see the budget at once.
    this.onChange();
    return (await this.store.getKey(k.id))!;
  }

  /**
   * One page of the keys, all or one account's, in creation order (`desc`: newest first). `after` is
   * the id of the last key of the previous page: the next page starts just past that key's
   * (created_at, id), so keys created meanwhile never shift or repeat a page.
   */
  async listKeys(q: KeyListQuery = {}): Promise<{ keys: ApiKeyRecord[]; hasMore: boolean }> {
    const limit = q.limit ?? KEY_LIST_DEFAULT_LIMIT;
    if (!Number.isInteger(limit) || limit < 1 || limit > KEY_LIST_MAX_LIMIT)
      throw errors.invalidRequest(`'limit' must be an integer from 1 to ${KEY_LIST_MAX_LIMIT}.`, 'limit');
    const accountId = q.account ? (await this.account(q.account)).id : undefined;
    let after: KeyListPage['after'];
    if (q.after) {
      const last = await this.store.getKey(q.after);
      if (!last || (accountId !== undefined && last.accountId !== accountId))
        throw errors.invalidRequest(`'after' is not the id of a key${q.account ? ` of account '${q.account}'` : ''}.`, 'after', 'invalid_cursor');
      after = { createdAt: last.createdAt, id: last.id };
    }
    const rows = await this.store.listKeys(accountId, { after, limit: limit + 1, order: q.order ?? 'asc' });
    return { keys: rows.slice(0, limit), hasMore: rows.length > limit };
  }

  async revokeKey(idOrPrefix: string): Promise<ApiKeyRecord> {
    const k = await this.findKey(idOrPrefix);
    if (!(await this.store.revokeKey(k.id, this.clock.now()))) throw errors.invalidRequest('That key is already revoked.', 'key', 'already_revoked');
    this.onChange();
    return (await this.store.getKey(k.id))!;
  }
}

/** Shapes shown by the CLI and the admin API: money in currency units, times in ISO 8601. */
export const view = {
  account: (a: Account) => ({
    id: a.id,
    name: a.name,
    balance: formatMicros(a.balance),
    balance_micros: a.balance,
    upstreams: a.upstreams ?? 'all',
    limits: a.limits,
    created_at: new Date(a.createdAt).toISOString(),
  }),
  key: (k: ApiKeyRecord) => ({
    id: k.id,
    prefix: k.prefix,
    account_id: k.accountId,
    name: k.name,
    models: k.models,
    actions: k.actions,
    limits: k.limits,
    budget: k.budget
      ? {
          total: k.budget.total === null ? null : formatMicros(k.budget.total),
          period: k.budget.period,
          period_limit: k.budget.periodLimit === null ? null : formatMicros(k.budget.periodLimit),
        }
      : null,
    expires_at: k.expiresAt ? new Date(k.expiresAt).toISOString() : null,
    revoked_at: k.revokedAt ? new Date(k.revokedAt).toISOString() : null,
    last_used_at: k.lastUsedAt ? new Date(k.lastUsedAt).toISOString() : null,
    created_at: new Date(k.createdAt).toISOString(),
  }),
  entry: (e: LedgerEntry) => ({
    id: e.id,
    kind: e.kind,
    amount: formatMicros(e.delta),
    amount_micros: e.delta,
    ref: e.ref,
    note: e.note,
    key_id: e.keyId,
    model: e.model,
    upstream: e.upstream,
    created_at: new Date(e.createdAt).toISOString(),
  }),
};
