import { useEffect, useId, useRef, useState, type ReactNode } from 'react';

/**
 * A secret just made (an API key, an invitation link, a webhook's signing secret), shown this
 * once: the server never answers it again. `children` say what it is for; a copy button, and an
 * explicit button (`doneLabel`) that puts it away; a panel in the page rather than a dialog, so
 * that Esc or a stray click cannot throw it away before it is copied.
 */
export function ShownOnce({ title, label, value, children, doneLabel = 'Done', onDone }: { title: ReactNode; label: string; value: string; children: ReactNode; doneLabel?: string; onDone: () => void }) {
  const id = useId();
  const heading = useRef<HTMLHeadingElement>(null);
  const field = useRef<HTMLInputElement>(null);
  const [copied, setCopied] = useState<'yes' | 'failed' | null>(null);
  useEffect(() => {
    heading.current?.focus();
    setCopied(null);
  }, [value]);

  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
      setCopied('yes');
    } catch {
      // No clipboard (permission refused, or not a secure context): selected for a copy by hand.
      setCopied('failed');
      field.current?.select();
    }
  };

  return (
    <section className="shown-once" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`} ref={heading} tabIndex={-1}>
        {title}
      </h2>
      {children}
      <div className="shown-row">
        <label htmlFor={`${id}-value`}>{label}</label>
        <input id={`${id}-value`} ref={field} className="secret" value={value} readOnly spellCheck={false} onFocus={(event) => event.target.select()} />
        <button type="button" onClick={() => void copy()}>
          Copy
        </button>
      </div>
      <p role="status" className="copy-state">
        {copied === 'yes' ? 'Copied to the clipboard.' : copied === 'failed' ? 'The browser refused to copy: the text is selected, copy it with the keyboard.' : ''}
      </p>
      <button type="button" className="secondary" onClick={onDone}>
        {doneLabel}
      </button>
    </section>
  );
}
