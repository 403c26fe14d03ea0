import { useEffect, useRef, type ReactNode } from 'react';

/**
 * A modal dialog, open while `open` is true: focus moves into it (to the element marked
 * `data-autofocus`, else the first control), Esc or `onClose` closes it, and the browser gives
 * focus back to what had it before.
 */
export function Modal({ open, onClose, labelledBy, className, children }: { open: boolean; onClose: () => void; labelledBy: string; className?: string; children: ReactNode }) {
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const element = dialog.current;
    if (!element) return;
    if (open && !element.open) {
      element.showModal();
      // showModal focuses the first control; a dialog may name another (the harmless choice).
      element.querySelector<HTMLElement>('[data-autofocus]')?.focus();
    }
    if (!open && element.open) element.close();
  }, [open]);
  return (
    <dialog ref={dialog} className={`modal ${className ?? ''}`} aria-labelledby={labelledBy} onClose={onClose}>
      {open ? children : null}
    </dialog>
  );
}
