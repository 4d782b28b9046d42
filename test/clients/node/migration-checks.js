'use strict';
// The checks of the migration tests (migrate.test.js, knex.test.js,
// kysely.test.js), made through node-postgres as the application's role
// beside the tool under test: who the role is, what the migration left,
// and that the keys the tool gave back are this server's, exact.

const assert = require('node:assert/strict');
const { Client } = require('pg');

const SERVER_NODE_ID = 42; // test/flakeid.conf

async function connect(database) {
  const client = new Client({ user: process.env.FLAKE_APP_USER, database });
  await client.connect();
  return client;
}

async function assertOwnerNotSuperuser(client) {
  const { rows } = await client.query(
    `SELECT r.rolsuper, pg_get_userbyid(d.datdba) = current_user AS owner
       FROM pg_roles r, pg_database d
      WHERE r.rolname = current_user AND d.datname = current_database()`);
  assert.deepEqual(rows, [{ rolsuper: false, owner: true }]);
}

// The extension's version and the type and default of events.id; null
// where they are gone.
async function schema(client) {
  const { rows } = await client.query(
    `SELECT (SELECT extversion FROM pg_extension WHERE extname = 'flakeid') AS extension,
            (SELECT format_type(atttypid, atttypmod) FROM pg_attribute
              WHERE attrelid = to_regclass('events') AND attname = 'id') AS id_type,
            (SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef
              WHERE adrelid = to_regclass('events') AND adnum = 1) AS id_default`);
  return rows[0];
}

// Keys of events rows as a tool gave them back: exact strings of IDs above
// 2^53, ascending, made by this server within a minute of now.
async function assertKeysOfThisServer(client, ids) {
  for (const id of ids) {
    assert.equal(typeof id, 'string');
    assert.ok(BigInt(id) > 2n ** 53n, `${id} is above 2^53`);
    const { rows } = await client.query(
      `SELECT id::text AS id, flakeid_node(id) AS node,
              abs(extract(epoch FROM flakeid_timestamp(id) - now())) < 60 AS recent
         FROM events WHERE id = $1::flakeid`, [id]);
    assert.deepEqual(rows, [{ id, node: SERVER_NODE_ID, recent: true }]);
  }
  const sorted = [...ids].sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1));
  assert.deepEqual(ids, sorted, 'ascending');
}

module.exports = { connect, assertOwnerNotSuperuser, schema, assertKeysOfThisServer };
