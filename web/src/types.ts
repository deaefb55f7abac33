/** The shapes the console reads from the API (only the fields it shows). */
export interface Session {
  role: 'operator' | 'key';
  label: string;
  csrf_token: string;
  expires_at: string;
}

export interface Account {
  id: string;
  name: string;
  balance: string;
  upstreams: string[] | 'all';
  limits: Record<string, { rpm?: number; tpm?: number }>;
  created_at: string;
}

export interface Key {
  id: string;
  prefix: string;
  name: string | null;
  models: string[];
  actions: string[];
  budget: { total: string | null; period: string | null; period_limit: string | null } | null;
  expires_at: string | null;
  revoked_at: string | null;
  last_used_at: string | null;
  created_at: string;
  key?: string;
}

/** One page of GET /admin/keys. */
export interface KeyPage {
  data: Key[];
  has_more: boolean;
  last_id: string | null;
}

export interface LedgerEntry {
  id: number;
  kind: string;
  amount: string;
  ref: string;
  note: string | null;
  key_id: string | null;
  model: string | null;
  upstream: string | null;
  created_at: string;
}

/** A job as either dialect or the admin view presents it. */
export interface Job {
  id: string;
  status: string;
  model: string;
  created_at: number;
  completed_at?: number | null;
  seconds?: number | string;
  progress?: number;
  output_url?: string;
  usage?: { cost?: number; held?: number };
  error?: { code: string; message: string } | null;
  vendor_data?: unknown;
  account_id?: string;
  upstream?: string | null;
  cost?: string | null;
  hold?: string;
}

export interface JobPage {
  data: Job[];
  has_more: boolean;
  last_id: string | null;
}

export interface Upstream {
  name: string;
  vendor: string;
  models: string[];
  circuit: string;
  consecutive_failures: number;
  calls: Record<string, number>;
  latency_ms: { samples: number; p50: number | null; p95: number | null; max: number | null };
  recent_errors: { at: string; outcome: string }[];
}
