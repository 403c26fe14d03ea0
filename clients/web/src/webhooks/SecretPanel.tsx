import { ShownOnce } from '../ShownOnce.tsx';

const timeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

/** A signing secret just made (a new webhook's, or a rotation's), and what it is for. */
export type ShownSecret = { webhookId: string; url: string; secret: string; previousExpiresAt: string | null };

/** A signing secret, shown this once (the server keeps it sealed and never answers it again). */
export function SecretPanel({ shown, onDone }: { shown: ShownSecret; onDone: () => void }) {
  return (
    <ShownOnce
      title={
        <>
          {shown.previousExpiresAt ? 'New signing secret' : 'Signing secret'} of <span className="url">{shown.url}</span>
        </>
      }
      label="Signing secret"
      value={shown.secret}
      doneLabel="I have copied it"
      onDone={onDone}
    >
      <p>
        Copy it now: it is shown this once. Receivers verify each delivery with it (any Standard Webhooks library takes it as it is).
        {shown.previousExpiresAt ? (
          <>
            {' '}
            The previous secret keeps signing deliveries until <time dateTime={shown.previousExpiresAt}>{timeFormat.format(new Date(shown.previousExpiresAt))}</time>, so that receivers can switch over.
          </>
        ) : null}
      </p>
    </ShownOnce>
  );
}
