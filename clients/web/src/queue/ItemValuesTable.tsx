import { Annotator } from './Annotator.tsx';
import { ScrollTable } from './ScrollTable.tsx';
import { annotatorsOf, type ItemValues, type SpecOfValues } from './annotator-values.ts';
import { ValueText } from './ValueText.tsx';

/**
 * Every annotator's values for one item side by side: a row per scorer spec (and one for notes),
 * a column per annotator.
 */
export function ItemValuesTable({ values, specs, meId, caption }: { values: ItemValues | undefined; specs: SpecOfValues[]; meId: string | undefined; caption: string }) {
  const annotators = annotatorsOf(values);
  if (!values || !annotators.length) return <p className="muted">No annotator has given a value for this item yet.</p>;
  const hasNotes = values.notes.size > 0;
  return (
    <ScrollTable label={caption}>
      <table className="side-by-side">
        <caption>{caption}</caption>
        <thead>
          <tr>
            <th scope="col">Spec</th>
            {annotators.map((who) => (
              <th scope="col" key={who}>
                <Annotator userId={who} meId={meId} />
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {specs.map((spec) => {
            const byWho = values.bySpec.get(spec.ref);
            return (
              <tr key={spec.ref}>
                <th scope="row">{spec.name}</th>
                {annotators.map((who) => {
                  const value = byWho?.get(who);
                  return <td key={who}>{value === undefined ? <span className="muted">none</span> : <ValueText value={value} />}</td>;
                })}
              </tr>
            );
          })}
          {hasNotes ? (
            <tr>
              <th scope="row">Note</th>
              {annotators.map((who) => (
                <td key={who} className="note">
                  {values.notes.get(who) ?? <span className="muted">none</span>}
                </td>
              ))}
            </tr>
          ) : null}
        </tbody>
      </table>
    </ScrollTable>
  );
}
