'use strict';
// flakeid through node-postgres (npm "pg"): IDs above 2^53, which a
// JavaScript number cannot hold, are read exactly as strings, both as
// column values and through to_json(), and IDs passed as parameters (strings
// or BigInts) are stored and read back exactly.  The connection comes from
// PGHOST, PGPORT, PGUSER and PGDATABASE; the server preloads flakeid.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { Client } = require('pg');

const ABOVE_2_53 = '9007199254740993'; // 2^53 + 1
const MAX = '9223372036854775807'; // 2^63 - 1

let client;

before(async () => {
  client = new Client();
  await client.connect();
  await client.query('CREATE EXTENSION IF NOT EXISTS flakeid');
  await client.query(`CREATE TEMP TABLE node_events (
    id flakeid PRIMARY KEY DEFAULT nextflake(),
    legacy bigint DEFAULT nextflake(),
    body text)`);
});

after(async () => {
  await client.end();
});

test('a JavaScript number cannot hold these IDs', () => {
  assert.notEqual(String(Number(ABOVE_2_53)), ABOVE_2_53);
  assert.notEqual(String(Number(MAX)), MAX);
});

test('flakeid values read as exact decimal strings', async () => {
  const { rows } = await client.query(
    `SELECT '9007199254740993'::flakeid AS id,
            '9223372036854775807'::flakeid AS max,
            to_json('9007199254740993'::flakeid) AS json_id,
            to_json('9223372036854775807'::flakeid) AS json_max,
            array_to_json(ARRAY['9007199254740993', '9223372036854775807']::flakeid[]) AS json_array`);
  const row = rows[0];
  assert.equal(typeof row.id, 'string');
  assert.equal(row.id, ABOVE_2_53);
  assert.equal(row.max, MAX);
  assert.equal(row.json_id, ABOVE_2_53);
  assert.equal(row.json_max, MAX);
  assert.deepEqual(row.json_array, [ABOVE_2_53, MAX]);
});

test('generated IDs above 2^53 read exactly, also through to_json and row_to_json', async () => {
  const { rows } = await client.query(
    `INSERT INTO node_events (body) SELECT 'gen' FROM generate_series(1, 100)
     RETURNING id, id::text AS id_text, to_json(id) AS json_id,
               row_to_json(node_events) AS json_row,
               legacy, legacy::text AS legacy_text,
               to_json(legacy::flakeid) AS json_legacy`);
  assert.equal(rows.length, 100);
  for (const row of rows) {
    assert.equal(typeof row.id, 'string');
    assert.ok(BigInt(row.id) > 2n ** 53n, `${row.id} is above 2^53`);
    assert.equal(row.id, row.id_text);
    assert.equal(row.json_id, row.id);
    assert.equal(row.json_row.id, row.id);
    // a bigint column reads as a string too (node-postgres' int8 default)
    assert.equal(row.legacy, row.legacy_text);
    assert.equal(row.json_legacy, row.legacy);
  }
});

test('a bigint in JSON is a number: cast it to flakeid for JSON', async () => {
  const { rows } = await client.query(
    `SELECT to_json(9007199254740993::bigint) AS as_bigint,
            to_json(9007199254740993::bigint::flakeid) AS as_flakeid`);
  assert.equal(typeof rows[0].as_bigint, 'number');
  assert.notEqual(String(rows[0].as_bigint), ABOVE_2_53);
  assert.equal(rows[0].as_flakeid, ABOVE_2_53);
});

test('IDs passed as parameters are stored and read back exactly', async () => {
  const params = [ABOVE_2_53, BigInt(MAX), 2n ** 60n + 7n, '1234567890123456789'];
  for (const param of params) {
    const inserted = await client.query(
      "INSERT INTO node_events (id, legacy, body) VALUES ($1, $2, 'param') RETURNING id, legacy",
      [param, param]);
    assert.equal(inserted.rows[0].id, String(param));
    assert.equal(inserted.rows[0].legacy, String(param));
    const found = await client.query(
      'SELECT id, to_json(id) AS json_id FROM node_events WHERE id = $1', [param]);
    assert.equal(found.rows.length, 1);
    assert.equal(found.rows[0].id, String(param));
    assert.equal(found.rows[0].json_id, String(param));
  }
});

test('compact text forms through parameters', async () => {
  const { rows } = await client.query(
    `SELECT flakeid_format($1, 'base32') AS base32,
            flakeid_parse(flakeid_format($1, 'base62'), 'base62') AS back`,
    [MAX]);
  assert.equal(rows[0].base32, '7ZZZZZZZZZZZZ');
  assert.equal(rows[0].back, MAX);
});

test('bad parameters fail with the SQLSTATE, never a wrong value', async () => {
  await assert.rejects(client.query('SELECT $1::flakeid', ['-1']), { code: '22003' });
  await assert.rejects(client.query('SELECT $1::flakeid', ['9223372036854775808']), { code: '22003' });
  await assert.rejects(client.query('SELECT $1::flakeid', ['12abc']), { code: '22P02' });
  await assert.rejects(client.query('SELECT $1::flakeid', [1.5]), { code: '22P02' });
});
