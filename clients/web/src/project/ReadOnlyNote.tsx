/** Why a viewer's write controls are disabled; those controls name it with aria-describedby. */
export const READ_ONLY_REASON = 'Viewers can read this project but not change it.';

/**
 * What the write controls of a section need: whether they may act, and why not (null while the
 * caller's role is being read), shown in the note `noteId`.
 */
export type Access = { writable: boolean; reason: string | null; noteId: string };

/** The reason a section's write controls are disabled, where it is seen and named. */
export function ReadOnlyNote({ access }: { access: Access }) {
  return !access.writable && access.reason ? (
    <p id={access.noteId} className="read-only-note">
      {access.reason}
    </p>
  ) : null;
}

/** The props that disable a write control for a viewer and point it at the reason. */
export function writeControl(access: Access, busy = false): { disabled: boolean; 'aria-describedby'?: string } {
  if (access.writable) return { disabled: busy };
  return access.reason ? { disabled: true, 'aria-describedby': access.noteId } : { disabled: true };
}
