/** A table's caption (for screen readers) and its column headers, the same on every page. */
export function TableHead({ caption, columns }: { caption: string; columns: string[] }) {
  return (
    <>
      <caption class="sr-only">{caption}</caption>
      <thead>
        <tr>
          {columns.map((c) => (
            <th scope="col" key={c}>
              {c}
            </th>
          ))}
        </tr>
      </thead>
    </>
  );
}
