import './annotator.css';

/** How an annotator is named on the page: the end of their user id (unique enough to tell them apart), or "you". */
export function annotatorLabel(userId: string, meId: string | undefined): string {
  return userId === meId ? 'you' : `user …${userId.slice(-8)}`;
}

/** An annotator's name, with the whole user id on hover. */
export function Annotator({ userId, meId }: { userId: string; meId: string | undefined }) {
  return (
    <span className="annotator" title={userId}>
      {annotatorLabel(userId, meId)}
    </span>
  );
}
