'use strict';
// flakeid in node-pg-migrate migrations, as docs/clients.md shows
// it: the CLI, run as the application's role (FLAKE_APP_USER, no
// superuser) that owns its database flakeid_pgmigrate, applies
// migrations/1700000000000_events.js (the extension and a table with
// DEFAULT nextflake()), reverts it and applies it again; rows inserted in
// between get IDs of this server that keep increasing.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const path = require('node:path');
const { connect, assertOwnerNotSuperuser, schema, assertKeysOfThisServer } = require('./migration-checks');

const DATABASE = 'flakeid_pgmigrate';
const CLI = path.join(__dirname, 'node_modules', 'node-pg-migrate', 'bin', 'node-pg-migrate.js');

// `npx node-pg-migrate up|down` in this directory, with the connection in
// the PG* variables.
function migrate(direction) {
  return execFileSync(process.execPath, [CLI, direction], {
    cwd: __dirname,
    env: { ...process.env, PGUSER: process.env.FLAKE_APP_USER, PGDATABASE: DATABASE },
    encoding: 'utf8',
  });
}

let client;

before(async () => {
  client = await connect(DATABASE);
});

after(async () => {
  await client.end();
});

async function insertAndDecode() {
  const { rows } = await client.query(
    "INSERT INTO events (body) VALUES ('one'), ('two'), ('three') RETURNING id");
  const ids = rows.map((row) => row.id);
  await assertKeysOfThisServer(client, ids);
  const found = await client.query('SELECT body FROM events WHERE id = $1', [ids[1]]);
  assert.deepEqual(found.rows, [{ body: 'two' }]);
  return ids.map(BigInt);
}

test('the application role owns the database and is not a superuser', async () => {
  await assertOwnerNotSuperuser(client);
});

test('up, insert and decode, down, up again', async () => {
  migrate('up');
  const first = await schema(client);
  assert.equal(first.id_type, 'flakeid');
  assert.equal(first.id_default, 'nextflake()');
  assert.ok(first.extension, 'the extension is installed');
  const before = await insertAndDecode();
  // the down step drops the table first: the extension cannot go while a
  // column uses its type
  await assert.rejects(client.query('DROP EXTENSION flakeid'), { code: '2BP01' });

  migrate('down');
  assert.deepEqual(await schema(client), { extension: null, id_type: null, id_default: null });
  const applied = await client.query('SELECT count(*)::int AS n FROM pgmigrations');
  assert.equal(applied.rows[0].n, 0);

  migrate('up');
  assert.deepEqual(await schema(client), first);
  const again = await insertAndDecode();
  assert.ok(again[0] > before[before.length - 1], 'IDs after the second up are above the first ones');
});
