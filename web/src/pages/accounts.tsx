import { useState } from 'preact/hooks';
import { api } from '../api';
import { ErrorNote } from '../components/error-note';
import { Field } from '../components/field';
import { useLoad } from '../components/use-load';
import { money, when } from '../format';
import { go, href } from '../router';
import type { Account } from '../types';
import { TableHead } from '../components/table-head';

/** Operator: every account (GET /admin/accounts) and a form to open one (POST /admin/accounts). */
export function Accounts() {
  const list = useLoad(() => api<{ data: Account[] }>('GET', '/admin/accounts'), []);
  const [name, setName] = useState('');
  const [balance, setBalance] = useState('');
  const [error, setError] = useState<unknown>();
  const create = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    try {
      const a = await api<Account>('POST', '/admin/accounts', { name: name.trim(), ...(balance ? { balance } : {}) });
      setName('');
      setBalance('');
      go('accounts', a.name);
    } catch (err) {
      setError(err);
    }
  };
  return (
    <section aria-labelledby="accounts-title">
      <h1 id="accounts-title">Accounts</h1>
      <ErrorNote error={list.error} />
      <div class="table-wrap">
        <table>
          <TableHead caption='Accounts' columns={['Name', 'Balance', 'Upstreams', 'Created']} />
          <tbody>
            {(list.data?.data ?? []).map((a) => (
              <tr key={a.id}>
                <td>
                  <a href={href('accounts', a.name)}>{a.name}</a>
                </td>
                <td>{money(a.balance)}</td>
                <td>{a.upstreams === 'all' ? 'all' : a.upstreams.join(', ') || 'none'}</td>
                <td>{when(a.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <h2>New account</h2>
      <form class="inline-form" onSubmit={create}>
        <Field id="new-account-name" label="Name" hint="1-64 letters, digits, dot, dash or underscore">
          <input id="new-account-name" required pattern="[A-Za-z0-9._\-]{1,64}" value={name} onInput={(e) => setName(e.currentTarget.value)} aria-describedby="new-account-name-hint" />
        </Field>
        <Field id="new-account-balance" label="Opening balance">
          <input id="new-account-balance" inputMode="decimal" value={balance} onInput={(e) => setBalance(e.currentTarget.value)} placeholder="0" />
        </Field>
        <button type="submit">Create account</button>
      </form>
      <ErrorNote error={error} />
    </section>
  );
}
