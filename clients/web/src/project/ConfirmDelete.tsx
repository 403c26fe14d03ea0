import type { ReactNode } from 'react';
import { Modal } from './Modal.tsx';

/**
 * Asks before something that cannot be undone (deleting, revoking, removing): what goes and what
 * stays, the server's refusal if any, the action's button and `cancel` ("Keep it"), which has the
 * focus first (the harmless choice). Open while `title` is given.
 */
export function ConfirmDelete({
  id,
  title,
  action,
  busy,
  failure,
  onConfirm,
  onClose,
  cancel = 'Keep it',
  children,
}: {
  id: string;
  title: string | null;
  action: string;
  busy: boolean;
  failure: string | undefined;
  onConfirm: () => void;
  onClose: () => void;
  cancel?: string;
  children: ReactNode;
}) {
  return (
    <Modal open={title !== null} onClose={onClose} labelledBy={id} className="confirm">
      <h2 id={id}>{title}</h2>
      {children}
      {failure ? (
        <p className="error" role="alert">
          {failure}
        </p>
      ) : null}
      <div className="actions">
        <button type="button" className="danger" onClick={onConfirm} disabled={busy}>
          {action}
        </button>
        <button type="button" className="secondary" onClick={onClose} data-autofocus>
          {cancel}
        </button>
      </div>
    </Modal>
  );
}
