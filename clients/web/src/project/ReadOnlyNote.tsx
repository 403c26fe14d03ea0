/** Why a viewer's write controls are disabled; those controls name it with aria-describedby. */
export const READ_ONLY_REASON = 'Viewers can read this project but not change it.';

export function ReadOnlyNote({ id, shown }: { id: string; shown: boolean }) {
  return shown ? (
    <p id={id} className="read-only-note">
      {READ_ONLY_REASON}
    </p>
  ) : null;
}

/** What a write control of a section needs: whether it may act, and the note that says why not. */
export type Access = { writable: boolean; noteId: string };

/** The props that disable a write control for a viewer and point it at the reason. */
export function writeControl(access: Access, busy = false): { disabled: boolean; 'aria-describedby'?: string } {
  return access.writable ? { disabled: busy } : { disabled: true, 'aria-describedby': access.noteId };
}
