import { Annotator } from '../queue/Annotator.tsx';
import { ScrollTable } from '../queue/ScrollTable.tsx';
import { scalarText, ValueText } from '../queue/ValueText.tsx';
import type { Agreement, Disagreement } from './agreement-queries.ts';

/**
 * The items whose values disagree most, each a disclosure with every annotator's value side by
 * side and a button that opens the item with its call.
 */
export function Disagreements({ agreement, meId, onOpen }: { agreement: Agreement; meId: string | undefined; onOpen: (disagreement: Disagreement) => void }) {
  if (!agreement.disagreements.length) return <p className="muted">No item has values that disagree.</p>;
  return (
    <ol className="disagreements">
      {agreement.disagreements.map((disagreement) => (
        <li key={disagreement.item_id}>
          <details>
            <summary>
              <code>{disagreement.call_id}</code>: {disagreement.values.map(({ value }) => (value !== null && typeof value === 'object' ? 'JSON' : scalarText(value))).join(', ')}
            </summary>
            <ScrollTable label={`Values for ${disagreement.call_id}`}>
              <table className="side-by-side">
                <caption>
                  Values of {agreement.name} for <code>{disagreement.call_id}</code>
                </caption>
                <thead>
                  <tr>
                    {disagreement.values.map(({ annotator_user_id }) => (
                      <th scope="col" key={annotator_user_id}>
                        <Annotator userId={annotator_user_id} meId={meId} />
                      </th>
                    ))}
                  </tr>
                </thead>
                <tbody>
                  <tr>
                    {disagreement.values.map(({ annotator_user_id, value }) => (
                      <td key={annotator_user_id}>
                        <ValueText value={value} />
                      </td>
                    ))}
                  </tr>
                </tbody>
              </table>
            </ScrollTable>
            <button type="button" className="secondary" onClick={() => onOpen(disagreement)}>
              Open the item with its call and every value
            </button>
          </details>
        </li>
      ))}
    </ol>
  );
}
