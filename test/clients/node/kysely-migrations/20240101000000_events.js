// The flakeid extension and a table whose key it fills in; down removes
// both.
const { sql } = require('kysely');

exports.up = async (db) => {
  await sql`CREATE EXTENSION IF NOT EXISTS flakeid`.execute(db);
  await db.schema
    .createTable('events')
    .addColumn('id', sql`flakeid`, (col) => col.primaryKey().defaultTo(sql`nextflake()`))
    .addColumn('body', 'text', (col) => col.notNull())
    .execute();
};

exports.down = async (db) => {
  await db.schema.dropTable('events').execute();
  await sql`DROP EXTENSION flakeid`.execute(db);
};
