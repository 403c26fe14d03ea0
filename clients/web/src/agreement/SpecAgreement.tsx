import { useId } from 'react';
import type { Agreement, Disagreement, Level } from './agreement-queries.ts';
import { Disagreements } from './Disagreements.tsx';
import { KappaHeatMap } from './KappaHeatMap.tsx';
import { BAND_WORDS, bandOf, formatAlpha, formatShare } from './reading.ts';

const LEVEL_WORDS: Record<Level, string> = {
  nominal: 'nominal (categories)',
  ordinal: 'ordinal (ranked values)',
  interval: 'interval (numbers)',
  ratio: 'ratio (numbers from zero)',
};

/** One scorer spec's agreement: alpha and observed agreement read in plain words, the kappa heat map, the disagreements. */
type Props = {
  agreement: Agreement;
  meId: string | undefined;
  /** Whether a level was just chosen and the figures are being computed again. */
  busy: boolean;
  onLevel: (level: Level) => void;
  onOpen: (disagreement: Disagreement) => void;
};

export function SpecAgreement({ agreement, meId, busy, onLevel, onOpen }: Props) {
  const id = useId();
  const levelId = useId();
  const band = agreement.alpha === null ? null : bandOf(agreement.alpha);
  return (
    <section className="panel spec-agreement" aria-labelledby={`${id}-title`} data-band={band ?? 'none'} aria-busy={busy}>
      <h2 id={`${id}-title`}>{agreement.name}</h2>
      <div className="agreement-summary">
        <dl className="figures">
          <div className="alpha">
            <dt>Krippendorff's α</dt>
            <dd>{agreement.alpha === null ? 'not computed' : formatAlpha(agreement.alpha)}</dd>
          </div>
          <div className="observed">
            <dt>Observed agreement</dt>
            <dd>{agreement.observed_agreement === null ? 'not computed' : formatShare(agreement.observed_agreement)}</dd>
          </div>
          <div>
            <dt>Annotators</dt>
            <dd>{agreement.annotators.length}</dd>
          </div>
          <div>
            <dt>Items rated</dt>
            <dd>{agreement.items_rated}</dd>
          </div>
          <div>
            <dt>Items with 2+ values</dt>
            <dd>{agreement.items_pairable}</dd>
          </div>
          <div>
            <dt>Values in those</dt>
            <dd>{agreement.values}</dd>
          </div>
        </dl>
        <p className="reading">
          {band ? (
            <>
              <strong className={`band band-${band}`}>{BAND_WORDS[band].title}.</strong> {BAND_WORDS[band].words}
            </>
          ) : (
            <>
              <strong className="band band-none">No α.</strong> {agreement.reason ?? 'Agreement could not be computed.'}
            </>
          )}
        </p>
        <p className="level">
          <label htmlFor={levelId}>Level of measurement</label>{' '}
          <select id={levelId} value={agreement.level ?? ''} onChange={(event) => event.target.value && onLevel(event.target.value as Level)}>
            {agreement.level === null ? <option value="">none (free text is not rated)</option> : null}
            {Object.entries(LEVEL_WORDS).map(([level, words]) => (
              <option key={level} value={level}>
                {words}
              </option>
            ))}
          </select>
        </p>
      </div>
      <h3>Agreement between annotators</h3>
      <KappaHeatMap agreement={agreement} meId={meId} />
      <h3>Disagreements</h3>
      {agreement.disagreements.length ? <p className="muted">The items whose values disagree most, the worst first (at most 20).</p> : null}
      <Disagreements agreement={agreement} meId={meId} onOpen={onOpen} />
    </section>
  );
}
