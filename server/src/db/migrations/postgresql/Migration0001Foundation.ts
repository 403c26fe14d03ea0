import { Migration } from '@mikro-orm/migrations';

export class Migration0001Foundation extends Migration {
  override up(): void {
    this.addSql(`create table users (
      id varchar(36) primary key,
      username varchar(128) not null unique,
      created_at timestamptz(3) not null)`);
    this.addSql(`create table api_keys (
      id varchar(36) primary key,
      user_id varchar(36) not null references users (id),
      key_hash char(64) not null unique,
      created_at timestamptz(3) not null,
      revoked_at timestamptz(3) null)`);
    this.addSql(`create index api_keys_user_id_idx on api_keys (user_id)`);
    this.addSql(`create table entities (
      name varchar(128) primary key,
      created_at timestamptz(3) not null)`);
    this.addSql(`create table memberships (
      user_id varchar(36) not null references users (id),
      entity varchar(128) not null references entities (name),
      role varchar(16) not null check (role in ('admin', 'member', 'viewer')),
      created_at timestamptz(3) not null,
      primary key (user_id, entity))`);
    this.addSql(`create table projects (
      id varchar(257) primary key,
      entity varchar(128) not null references entities (name),
      name varchar(128) not null,
      created_at timestamptz(3) not null)`);
  }
}
