'use strict';
// flakeid in Knex migrations, as docs/clients.md shows it: as the
// application's role (FLAKE_APP_USER, no superuser) that owns its database
// flakeid_knex, knex.migrate applies knex-migrations (the extension and a
// table with DEFAULT nextflake()), rolls it back and applies it again;
// rows inserted through Knex in between get exact string keys of this
// server that keep increasing.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const Knex = require('knex');
const { connect, assertOwnerNotSuperuser, schema, assertKeysOfThisServer } = require('./migration-checks');

const DATABASE = 'flakeid_knex';

let knex;
let client;

before(async () => {
  knex = Knex({
    client: 'pg',
    connection: { user: process.env.FLAKE_APP_USER, database: DATABASE },
    migrations: { directory: path.join(__dirname, 'knex-migrations') },
  });
  client = await connect(DATABASE);
});

after(async () => {
  await client.end();
  await knex.destroy();
});

// Inserts three events through Knex; their keys, checked.
async function insert() {
  const rows = await knex('events').insert([{ body: 'one' }, { body: 'two' }, { body: 'three' }]).returning('id');
  const ids = rows.map((row) => row.id);
  await assertKeysOfThisServer(client, ids);
  assert.deepEqual(await knex('events').where({ id: ids[1] }).select('body'), [{ body: 'two' }]);
  assert.deepEqual(await knex('events').whereIn('id', ids).orderBy('id').pluck('id'), ids);
  return ids;
}

test('the application role owns the database and is not a superuser', async () => {
  await assertOwnerNotSuperuser(client);
});

test('migrate, insert and select, roll back, migrate again', async () => {
  await knex.migrate.latest();
  const first = await schema(client);
  assert.equal(first.id_type, 'flakeid');
  assert.equal(first.id_default, 'nextflake()');
  assert.ok(first.extension, 'the extension is installed');
  const before = await insert();

  await knex.migrate.rollback();
  assert.deepEqual(await schema(client), { extension: null, id_type: null, id_default: null });

  await knex.migrate.latest();
  assert.deepEqual(await schema(client), first);
  const again = await insert();
  assert.ok(BigInt(again[0]) > BigInt(before[before.length - 1]), 'keys after the second migration are above the first ones');
});
