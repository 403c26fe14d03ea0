import type { ReactNode } from 'react';

/**
 * A table that may be wider than its place: its frame scrolls sideways, and takes focus so that the
 * keyboard can scroll it too.
 */
export function ScrollTable({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div className="table-wrap" role="region" aria-label={label} tabIndex={0}>
      {children}
    </div>
  );
}
