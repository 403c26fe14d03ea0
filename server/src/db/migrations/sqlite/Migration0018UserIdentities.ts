import { Migration } from '@mikro-orm/migrations';

/** Single sign-on (contract 5.12): a user's account at a provider, by the provider's issuer and `sub`. */
export class Migration0018UserIdentities extends Migration {
  override up(): void {
    this.addSql(`create table user_identities (
      issuer text not null,
      subject text not null,
      user_id text not null references users (id),
      created_at datetime not null,
      primary key (issuer, subject))`);
    this.addSql(`create index user_identities_user_idx on user_identities (user_id)`);
  }
}
