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
const { Client } = require('pg');

const SERVER_NODE_ID = 42; // test/flakeid.conf
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
  client = new Client({ user: process.env.FLAKE_APP_USER, database: DATABASE });
  await client.connect();
});

after(async () => {
  await client.end();
});

async function insertAndDecode() {
  const { rows } = await client.query(
    `INSERT INTO events (body) VALUES ('one'), ('two'), ('three')
     RETURNING id, flakeid_node(id) AS node, flakeid_timestamp(id) AS ts`);
  const ids = rows.map((row) => BigInt(row.id));
  for (const row of rows) {
    assert.ok(BigInt(row.id) > 2n ** 53n, `${row.id} is above 2^53`);
    assert.equal(row.node, SERVER_NODE_ID);
    assert.ok(Math.abs(row.ts.getTime() - Date.now()) < 60000, `${row.ts} is now`);
  }
  assert.ok(ids[0] < ids[1] && ids[1] < ids[2], 'ascending');
  const found = await client.query('SELECT body FROM events WHERE id = $1', [rows[1].id]);
  assert.deepEqual(found.rows, [{ body: 'two' }]);
  return ids;
}

async function schema() {
  const { rows } = await client.query(
    `SELECT (SELECT extversion FROM pg_extension WHERE extname = 'flakeid') AS extension,
            (SELECT format_type(atttypid, atttypmod) FROM pg_attribute
              WHERE attrelid = to_regclass('events') AND attname = 'id') AS id_type,
            (SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef
              WHERE adrelid = to_regclass('events') AND adnum = 1) AS id_default`);
  return rows[0];
}

test('the application role owns the database and is not a superuser', async () => {
  const { rows } = await client.query(
    `SELECT r.rolsuper, pg_get_userbyid(d.datdba) = current_user AS owner
       FROM pg_roles r, pg_database d
      WHERE r.rolname = current_user AND d.datname = current_database()`);
  assert.deepEqual(rows, [{ rolsuper: false, owner: true }]);
});

test('up, insert and decode, down, up again', async () => {
  migrate('up');
  const first = await schema();
  assert.equal(first.id_type, 'flakeid');
  assert.equal(first.id_default, 'nextflake()');
  assert.ok(first.extension, 'the extension is installed');
  const before = await insertAndDecode();
  // the down step drops the table first: the extension cannot go while a
  // column uses its type
  await assert.rejects(client.query('DROP EXTENSION flakeid'), { code: '2BP01' });

  migrate('down');
  assert.deepEqual(await schema(), { extension: null, id_type: null, id_default: null });
  const applied = await client.query('SELECT count(*)::int AS n FROM pgmigrations');
  assert.equal(applied.rows[0].n, 0);

  migrate('up');
  assert.deepEqual(await schema(), first);
  const again = await insertAndDecode();
  assert.ok(again[0] > before[before.length - 1], 'IDs after the second up are above the first ones');
});
