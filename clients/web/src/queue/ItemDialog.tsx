import type { LoupeClient } from '@loupe/client';
import { useQuery } from '@tanstack/react-query';
import { useEffect, useId, useMemo, useRef } from 'react';
import { messageOf } from '../api.ts';
import { callQuery } from '../annotate/annotate-queries.ts';
import { CallView } from '../annotate/CallView.tsx';
import { valuesByCall, type SpecOfValues } from './annotator-values.ts';
import { ItemValuesTable } from './ItemValuesTable.tsx';
import { itemFeedbackQuery, queueItemOfCallQuery } from './queue-queries.ts';
import '../annotate/annotate.css';
import './item-dialog.css';

type Props = {
  client: LoupeClient;
  session: number;
  projectId: string;
  queueId: string;
  specs: SpecOfValues[];
  meId: string | undefined;
  /** The call of the item shown; null when the dialog is closed. */
  callId: string | null;
  onClose: () => void;
};

/**
 * One item in a modal dialog: every annotator's values side by side, beside the call. Esc or the
 * Close button closes it, and focus goes back to what opened it (the dialog element does that).
 */
export function ItemDialog({ client, session, projectId, queueId, specs, meId, callId: opened, onClose }: Props) {
  const dialog = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  const headingId = useId();
  const open = opened !== null;
  useEffect(() => {
    const element = dialog.current;
    if (!element) return;
    if (open && !element.open) element.showModal();
    if (!open && element.open) element.close();
  }, [open]);
  const callId = opened ?? '';
  const item = useQuery({ ...queueItemOfCallQuery(client, session, projectId, queueId, callId), enabled: open });
  const call = useQuery({ ...callQuery(client, session, projectId, callId), enabled: open });
  const records = useQuery({ ...itemFeedbackQuery(client, session, projectId, queueId, callId), enabled: open });
  const values = useMemo(() => (records.data ? valuesByCall(projectId, records.data, specs).get(callId) : undefined), [records.data, projectId, specs, callId]);

  return (
    <dialog ref={dialog} className="item-dialog" aria-labelledby={titleId} onClose={onClose}>
      {open ? (
        <>
          <div className="item-dialog-head">
            <h2 id={titleId}>
              Item {item.data?.call_op_name ?? call.data?.op_name ?? ''} <code>{callId}</code>
            </h2>
            <button type="button" className="secondary" onClick={onClose}>
              Close
            </button>
          </div>
          <div className="item-dialog-body">
            <section className="item-values" aria-label="Every annotator's values">
              {records.isSuccess ? (
                <ItemValuesTable values={values} specs={specs} meId={meId} caption="Values by annotator" />
              ) : records.isError ? (
                <p className="error" role="alert">{messageOf(records.error)}</p>
              ) : (
                <p>Loading the values…</p>
              )}
            </section>
            <div className="item-call">
              {call.isSuccess && !item.isPending ? (
                <CallView call={call.data} displayFields={item.data?.display_fields ?? []} headingId={headingId} />
              ) : call.isError ? (
                <p className="error" role="alert">{messageOf(call.error)}</p>
              ) : (
                <p>Loading the call…</p>
              )}
            </div>
          </div>
        </>
      ) : null}
    </dialog>
  );
}
