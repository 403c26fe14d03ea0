import { Migration } from '@mikro-orm/migrations';

/**
 * People (contract 5.12): a user's password hash and when they were last seen, a name for an API
 * key, sessions (only the SHA-256 of their token is stored), invitations (likewise) and the audit
 * log of an entity.
 */
export class Migration0017People extends Migration {
  override up(): void {
    this.addSql(`alter table users add column password_hash text null`);
    this.addSql(`alter table users add column last_seen_at timestamptz(3) null`);
    this.addSql(`alter table api_keys add column name text null`);
    this.addSql(`create table sessions (
      id text primary key,
      token_hash text not null unique,
      user_id text not null references users (id),
      client_address text null,
      created_at timestamptz(3) not null,
      last_seen_at timestamptz(3) not null,
      expires_at timestamptz(3) not null)`);
    this.addSql(`create index sessions_user_idx on sessions (user_id)`);
    this.addSql(`create table invitations (
      id text primary key,
      entity text not null references entities (name),
      role text not null check (role in ('admin', 'member', 'annotator', 'viewer')),
      token_hash text not null unique,
      email text null,
      created_by text not null references users (id),
      created_at timestamptz(3) not null,
      expires_at timestamptz(3) not null,
      revoked_at timestamptz(3) null,
      revoked_by text null references users (id),
      accepted_at timestamptz(3) null,
      accepted_by text null references users (id))`);
    this.addSql(`create index invitations_entity_idx on invitations (entity, created_at)`);
    this.addSql(`create table audit_events (
      id text primary key,
      entity text null,
      action text not null,
      actor_user_id text null,
      actor_username text null,
      subject_user_id text null,
      detail jsonb null,
      client_address text null,
      created_at timestamptz(3) not null)`);
    this.addSql(`create index audit_events_entity_idx on audit_events (entity, created_at, id)`);
  }
}
