'use strict';
// flakeid in Kysely migrations, as docs/clients.md shows it: as the
// application's role (FLAKE_APP_USER, no superuser) that owns its database
// flakeid_kysely, Kysely's Migrator applies kysely-migrations (the
// extension and a table with DEFAULT nextflake()), reverts it and applies
// it again; rows inserted through Kysely in between get exact string keys
// of this server that keep increasing.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs/promises');
const path = require('node:path');
const { Pool } = require('pg');
const { Kysely, PostgresDialect, Migrator, FileMigrationProvider } = require('kysely');
const { connect, assertOwnerNotSuperuser, schema, assertKeysOfThisServer } = require('./migration-checks');

const DATABASE = 'flakeid_kysely';

let db;
let migrator;
let client;

before(async () => {
  db = new Kysely({
    dialect: new PostgresDialect({ pool: new Pool({ user: process.env.FLAKE_APP_USER, database: DATABASE }) }),
  });
  migrator = new Migrator({
    db,
    provider: new FileMigrationProvider({ fs, path, migrationFolder: path.join(__dirname, 'kysely-migrations') }),
  });
  client = await connect(DATABASE);
});

after(async () => {
  await client.end();
  await db.destroy();
});

// Runs a Migrator method; fails with the migration's error.
async function migrate(method) {
  const { error, results } = await migrator[method]();
  if (error) throw error;
  assert.deepEqual(results.map((r) => r.status), ['Success']);
}

// Inserts three events through Kysely; their keys, checked.
async function insert() {
  const rows = await db.insertInto('events')
    .values([{ body: 'one' }, { body: 'two' }, { body: 'three' }])
    .returning('id')
    .execute();
  const ids = rows.map((row) => row.id);
  await assertKeysOfThisServer(client, ids);
  assert.deepEqual(await db.selectFrom('events').select('body').where('id', '=', ids[1]).execute(), [{ body: 'two' }]);
  const found = await db.selectFrom('events').select('id').where('id', 'in', ids).orderBy('id').execute();
  assert.deepEqual(found.map((row) => row.id), ids);
  return ids;
}

test('the application role owns the database and is not a superuser', async () => {
  await assertOwnerNotSuperuser(client);
});

test('migrate, insert and select, migrate down, migrate again', async () => {
  await migrate('migrateToLatest');
  const first = await schema(client);
  assert.equal(first.id_type, 'flakeid');
  assert.equal(first.id_default, 'nextflake()');
  assert.ok(first.extension, 'the extension is installed');
  const before = await insert();

  await migrate('migrateDown');
  assert.deepEqual(await schema(client), { extension: null, id_type: null, id_default: null });

  await migrate('migrateToLatest');
  assert.deepEqual(await schema(client), first);
  const again = await insert();
  assert.ok(BigInt(again[0]) > BigInt(before[before.length - 1]), 'keys after the second migration are above the first ones');
});
