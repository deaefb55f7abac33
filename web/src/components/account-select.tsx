import { Field } from './field';
import type { Account } from '../types';

/** The operator's "which account" filter: every account by name, or all of them. */
export function AccountSelect({ id, value, accounts, onChange }: { id: string; value: string; accounts: Account[]; onChange: (e: Event) => void }) {
  return (
    <Field id={id} label="Account">
      <select id={id} value={value} onChange={onChange}>
        <option value="">all</option>
        {accounts.map((a) => (
          <option key={a.id} value={a.name}>
            {a.name}
          </option>
        ))}
      </select>
    </Field>
  );
}
