import { useEffect, useId, useRef, useState } from 'react';

const timeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

/** A signing secret just made (a new webhook's, or a rotation's), and what it is for. */
export type ShownSecret = { webhookId: string; url: string; secret: string; previousExpiresAt: string | null };

/**
 * A signing secret, shown this once (the server keeps it sealed and never answers it again): a
 * copy button, and an explicit "I have copied it" that puts it away. A panel in the page rather
 * than a dialog, so that Esc or a stray click cannot throw the secret away.
 */
export function SecretPanel({ shown, onDone }: { shown: ShownSecret; onDone: () => void }) {
  const id = useId();
  const heading = useRef<HTMLHeadingElement>(null);
  const field = useRef<HTMLInputElement>(null);
  const [copied, setCopied] = useState<'yes' | 'failed' | null>(null);
  useEffect(() => {
    heading.current?.focus();
    setCopied(null);
  }, [shown]);

  const copy = async () => {
    try {
      await navigator.clipboard.writeText(shown.secret);
      setCopied('yes');
    } catch {
      // No clipboard (permission refused, or not a secure context): the secret is selected for a copy by hand.
      setCopied('failed');
      field.current?.select();
    }
  };

  return (
    <section className="secret-panel" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`} ref={heading} tabIndex={-1}>
        {shown.previousExpiresAt ? 'New signing secret' : 'Signing secret'} of <span className="url">{shown.url}</span>
      </h2>
      <p>
        Copy it now: it is shown this once. Receivers verify each delivery with it (any Standard Webhooks library takes it as it is).
        {shown.previousExpiresAt ? (
          <>
            {' '}
            The previous secret keeps signing deliveries until <time dateTime={shown.previousExpiresAt}>{timeFormat.format(new Date(shown.previousExpiresAt))}</time>, so that receivers can switch over.
          </>
        ) : null}
      </p>
      <div className="secret-row">
        <label htmlFor={`${id}-secret`}>Signing secret</label>
        <input id={`${id}-secret`} ref={field} className="secret" value={shown.secret} readOnly spellCheck={false} onFocus={(event) => event.target.select()} />
        <button type="button" onClick={() => void copy()}>
          Copy
        </button>
      </div>
      <p role="status" className="copy-state">
        {copied === 'yes' ? 'Copied to the clipboard.' : copied === 'failed' ? 'The browser refused to copy: the secret is selected, copy it with the keyboard.' : ''}
      </p>
      <button type="button" className="secondary" onClick={onDone}>
        I have copied it
      </button>
    </section>
  );
}
