import { Migration } from '@mikro-orm/migrations';

export class Migration0001Foundation extends Migration {
  override up(): void {
    this.addSql(`create table users (
      id text primary key,
      username text not null unique,
      created_at datetime not null)`);
    this.addSql(`create table api_keys (
      id text primary key,
      user_id text not null references users (id),
      key_hash text not null unique,
      created_at datetime not null,
      revoked_at datetime null)`);
    this.addSql(`create index api_keys_user_id_idx on api_keys (user_id)`);
    this.addSql(`create table entities (
      name text primary key,
      created_at datetime not null)`);
    this.addSql(`create table memberships (
      user_id text not null references users (id),
      entity text not null references entities (name),
      role text not null check (role in ('admin', 'member', 'viewer')),
      created_at datetime not null,
      primary key (user_id, entity))`);
    this.addSql(`create table projects (
      id text primary key,
      entity text not null references entities (name),
      name text not null,
      created_at datetime not null)`);
  }
}
