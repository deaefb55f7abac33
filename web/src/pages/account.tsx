import { useState } from 'preact/hooks';
import { api } from '../api';
import { ErrorNote } from '../components/error-note';
import { Field } from '../components/field';
import { useLoad } from '../components/use-load';
import { money, when } from '../format';
import { href } from '../router';
import type { Account as AccountT } from '../types';
import { AccountSettings } from './account-settings';
import { KeysPanel } from './keys-panel';
import { LedgerPanel } from './ledger-panel';

/** Operator: one account: balance and top-up, upstreams and limits, keys, ledger. */
export function Account({ name }: { name: string }) {
  const account = useLoad(() => api<AccountT>('GET', `/admin/accounts/${encodeURIComponent(name)}`), [name]);
  const [amount, setAmount] = useState('');
  const [note, setNote] = useState('');
  const [error, setError] = useState<unknown>();
  const [ledgerTick, setLedgerTick] = useState(0);
  const topUp = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    try {
      await api('POST', `/admin/accounts/${encodeURIComponent(name)}/topup`, { amount: amount.trim(), ...(note ? { note } : {}) });
      setAmount('');
      setNote('');
      account.reload();
      setLedgerTick((t) => t + 1);
    } catch (err) {
      setError(err);
    }
  };
  const a = account.data;
  return (
    <section aria-labelledby="account-title">
      <p>
        <a href={href('accounts')}>← All accounts</a>
      </p>
      <h1 id="account-title">Account {name}</h1>
      <ErrorNote error={account.error} />
      {a && (
        <dl class="facts">
          <dt>Balance</dt>
          <dd data-testid="balance">{money(a.balance)}</dd>
          <dt>Upstreams</dt>
          <dd>{a.upstreams === 'all' ? 'all' : a.upstreams.join(', ') || 'none'}</dd>
          <dt>Created</dt>
          <dd>{when(a.created_at)}</dd>
          <dt>Id</dt>
          <dd class="mono">{a.id}</dd>
        </dl>
      )}
      <h2>Top up</h2>
      <form class="inline-form" onSubmit={topUp}>
        <Field id="topup-amount" label="Amount">
          <input id="topup-amount" required inputMode="decimal" value={amount} onInput={(e) => setAmount(e.currentTarget.value)} />
        </Field>
        <Field id="topup-note" label="Note">
          <input id="topup-note" maxLength={500} value={note} onInput={(e) => setNote(e.currentTarget.value)} />
        </Field>
        <button type="submit">Top up</button>
      </form>
      <ErrorNote error={error} />
      {a && <AccountSettings account={a} onSaved={account.reload} />}
      <KeysPanel account={name} />
      <LedgerPanel account={name} refresh={ledgerTick} />
    </section>
  );
}
