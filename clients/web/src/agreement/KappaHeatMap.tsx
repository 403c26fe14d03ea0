import { Annotator } from '../queue/Annotator.tsx';
import { ScrollTable } from '../queue/ScrollTable.tsx';
import type { Agreement, AgreementPair } from './agreement-queries.ts';
import { formatKappa, formatShare } from './reading.ts';

/**
 * The background of a kappa: red at or below 0 through yellow to green at 1, always light, so that
 * the dark text on it keeps a contrast above 7:1. The value is written in every cell: the colour
 * only helps the eye.
 */
export function kappaColour(kappa: number): string {
  const k = Math.max(0, Math.min(1, kappa));
  return `hsl(${Math.round(130 * k)} 60% ${Math.round(88 - 8 * k)}%)`;
}

const LEGEND = [0, 0.2, 0.4, 0.6, 0.8, 1];

/** Cohen's kappa between every two annotators, as a table coloured like a heat map. */
export function KappaHeatMap({ agreement, meId }: { agreement: Agreement; meId: string | undefined }) {
  const { annotators, pairs } = agreement;
  if (annotators.length < 2) return <p className="muted">Fewer than two annotators gave values: there are no pairs to compare.</p>;
  const pairOf = new Map<string, AgreementPair>();
  for (const pair of pairs) {
    pairOf.set(`${pair.annotator_a}\u0000${pair.annotator_b}`, pair);
    pairOf.set(`${pair.annotator_b}\u0000${pair.annotator_a}`, pair);
  }
  const weighting = agreement.level === 'nominal' ? 'unweighted' : 'quadratic-weighted';
  return (
    <div className="heat-map">
      <ScrollTable label={`Kappa between annotators of ${agreement.name}`}>
        <table className="kappa">
          <caption>
            Cohen's kappa ({weighting}) between each two annotators of {agreement.name}, with the items they both rated and how often they agree
          </caption>
          <thead>
            <tr>
              <td />
              {annotators.map((who) => (
                <th scope="col" key={who}>
                  <Annotator userId={who} meId={meId} />
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {annotators.map((rowWho) => (
              <tr key={rowWho}>
                <th scope="row">
                  <Annotator userId={rowWho} meId={meId} />
                </th>
                {annotators.map((colWho) => {
                  if (rowWho === colWho) {
                    return (
                      <td key={colWho} className="self">
                        <span aria-hidden="true">—</span>{' '}
                        <span className="visually-hidden">the same annotator</span>
                      </td>
                    );
                  }
                  const pair = pairOf.get(`${rowWho}\u0000${colWho}`);
                  if (!pair) {
                    return (
                      <td key={colWho} className="no-pair">
                        no items in common
                      </td>
                    );
                  }
                  return (
                    <td key={colWho} className="pair" style={pair.kappa === null ? undefined : { backgroundColor: kappaColour(pair.kappa) }} data-kappa={pair.kappa ?? ''}>
                      <span className="kappa-value">{pair.kappa === null ? 'κ undefined' : `κ ${formatKappa(pair.kappa)}`}</span>
                      <span className="pair-facts">
                        {pair.items === 1 ? '1 item' : `${pair.items} items`}, {formatShare(pair.agreement)} agree
                      </span>
                    </td>
                  );
                })}
              </tr>
            ))}
          </tbody>
        </table>
      </ScrollTable>
      <p className="heat-legend">
        <span className="visually-hidden">Colour scale: </span>
        {LEGEND.map((k) => (
          <span key={k} className="swatch" style={{ backgroundColor: kappaColour(k) }}>
            {k === 0 ? 'κ ≤ 0' : `κ ${formatKappa(k)}`}
          </span>
        ))}
        <span className="swatch undefined">undefined</span>
      </p>
    </div>
  );
}
