import { useUserName } from '../users/UserNames.tsx';
import './annotator.css';

/**
 * An annotator on the page: "you", their username, or — for an id the server does not name, or
 * until the names arrive — the end of their user id (unique enough to tell them apart). The whole
 * user id shows on hover.
 */
export function Annotator({ userId, meId }: { userId: string; meId: string | undefined }) {
  const isMe = userId === meId;
  const username = useUserName(isMe ? undefined : userId);
  const label = isMe ? 'you' : (username ?? `user …${userId.slice(-8)}`);
  return (
    <span className={username === undefined && !isMe ? 'annotator unnamed' : 'annotator'} title={userId}>
      {label}
    </span>
  );
}
