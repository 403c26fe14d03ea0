// How an alpha reads in plain words, by Krippendorff's own thresholds: rely on variables with
// α ≥ .800; consider those with .667 ≤ α < .800 only for drawing tentative conclusions.

export const THRESHOLDS = { reliable: 0.8, tentative: 0.667 } as const;

export const THRESHOLDS_SOURCE = 'Krippendorff, K. (2004). Content Analysis: An Introduction to Its Methodology (2nd ed.), p. 241. Thousand Oaks, CA: Sage.';

export type Band = 'reliable' | 'tentative' | 'unreliable';

export function bandOf(alpha: number): Band {
  if (alpha >= THRESHOLDS.reliable) return 'reliable';
  if (alpha >= THRESHOLDS.tentative) return 'tentative';
  return 'unreliable';
}

export const BAND_WORDS: Record<Band, { title: string; words: string }> = {
  reliable: { title: 'Reliable', words: 'α ≥ 0.800: the annotators agree well enough to rely on these values.' },
  tentative: { title: 'Tentative', words: '0.667 ≤ α < 0.800: good enough for tentative conclusions only.' },
  unreliable: { title: 'Not reliable', words: 'α < 0.667: the annotators agree too little to draw conclusions from these values.' },
};

/** α with three decimals, as the thresholds are written (a true minus sign below zero). */
export function formatAlpha(alpha: number): string {
  return alpha.toFixed(3).replace('-', '−');
}

/** A share as a percentage with one decimal. */
export function formatShare(share: number): string {
  return `${(share * 100).toFixed(1)}%`;
}

/** Cohen's kappa with two decimals (a true minus sign below zero). */
export function formatKappa(kappa: number): string {
  return kappa.toFixed(2).replace('-', '−');
}
