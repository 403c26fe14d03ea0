import { useId, type ReactNode } from 'react';
import { Modal } from '../project/Modal.tsx';

/**
 * Asks before something that cannot be undone (revoking a key, removing a member). Cancel has the
 * focus first, so that Enter on the way in does not confirm; a refusal shows inside the dialog.
 */
export function ConfirmDialog({ open, title, children, confirm, pending, error, onConfirm, onClose }: {
  open: boolean;
  title: string;
  children: ReactNode;
  confirm: string;
  pending: boolean;
  error: string | undefined;
  onConfirm: () => void;
  onClose: () => void;
}) {
  const id = useId();
  return (
    <Modal open={open} onClose={onClose} labelledBy={`${id}-title`} className="confirm">
      <h2 id={`${id}-title`}>{title}</h2>
      {children}
      {error ? (
        <p className="error" role="alert">
          {error}
        </p>
      ) : null}
      <div className="dialog-actions">
        <button type="button" className="danger" onClick={onConfirm} disabled={pending}>
          {confirm}
        </button>
        <button type="button" className="secondary" onClick={onClose} data-autofocus>
          Cancel
        </button>
      </div>
    </Modal>
  );
}
