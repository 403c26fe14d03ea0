import { Migration } from '@mikro-orm/migrations';

/**
 * Webhooks (contract 5.13): the endpoints of a project, the events written in the same transaction
 * as the change that caused them (the outbox), and one delivery per event and subscribed webhook,
 * with the lease that lets one process at a time attempt it.
 */
export class Migration0015Webhooks extends Migration {
  override up(): void {
    this.addSql(`create table webhooks (
      id text primary key,
      project_id text not null references projects (id),
      url text not null,
      events jsonb not null,
      description text null,
      secret text not null,
      previous_secret text null,
      previous_secret_expires_at timestamptz(3) null,
      disabled_at timestamptz(3) null,
      disabled_reason text null,
      failing_since timestamptz(3) null,
      created_by text not null references users (id),
      created_at timestamptz(3) not null,
      updated_at timestamptz(3) not null,
      deleted_at timestamptz(3) null)`);
    this.addSql(`create index webhooks_project_idx on webhooks (project_id, created_at) where deleted_at is null`);
    this.addSql(`create table webhook_events (
      id text primary key,
      project_id text not null,
      type text not null,
      data text not null,
      created_at timestamptz(3) not null)`);
    // data is the payload's JSON text as written: every attempt, by any process, sends the same bytes.
    this.addSql(`create index webhook_events_created_idx on webhook_events (created_at)`);
    // Stored as written, not compressed: compressing a large payload would cost the writing
    // transaction, and the delivery workers mostly hold it already.
    this.addSql(`alter table webhook_events alter column data set storage external`);
    this.addSql(`create table webhook_deliveries (
      id text primary key,
      webhook_id text not null references webhooks (id),
      event_id text not null references webhook_events (id),
      state text not null check (state in ('pending', 'delivered', 'failed')),
      attempts integer not null,
      last_status integer null,
      last_error text null,
      next_attempt_at timestamptz(3) null,
      lease_owner text null,
      lease_expires_at timestamptz(3) null,
      created_at timestamptz(3) not null,
      updated_at timestamptz(3) not null)`);
    // One delivery per event and webhook; also the lookup of an event's deliveries (retention).
    this.addSql(`create unique index webhook_deliveries_event_uq on webhook_deliveries (event_id, webhook_id)`);
    // What the delivery workers poll: the pending deliveries (exactly those with a next attempt) by when they are due.
    this.addSql(`create index webhook_deliveries_due_idx on webhook_deliveries (next_attempt_at) where next_attempt_at is not null`);
    this.addSql(`create index webhook_deliveries_webhook_idx on webhook_deliveries (webhook_id, created_at, id)`);
    // What the clean-up removes: finished deliveries (no next attempt) by when they finished.
    this.addSql(`create index webhook_deliveries_finished_idx on webhook_deliveries (updated_at) where next_attempt_at is null`);
  }
}
