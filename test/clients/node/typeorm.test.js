'use strict';
// flakeid through TypeORM 0.3, as docs/clients.md shows it: the entities
// of typeorm-entities.js, whose keys are declared bigint (TypeORM refuses a
// column of type flakeid), over a bigint column with DEFAULT nextflake()
// that synchronize makes, and over a flakeid column that a migration makes
// and synchronize must leave alone.  It connects as the application's role
// (FLAKE_APP_USER, no superuser) to its database flakeid_typeorm, through
// PGHOST and PGPORT.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { DataSource, EntitySchema } = require('typeorm');
const { Event, Order, dataSourceOptions } = require('./typeorm-entities');

const SERVER_NODE_ID = 42; // test/flakeid.conf

// The flakeid table without synchronize: false, to show what synchronize
// would do to it.
const SyncedEvent = new EntitySchema({ ...Event.options, synchronize: true });

// A column declared as type flakeid.
const FlakeidTyped = new EntitySchema({
  name: 'FlakeidTyped',
  tableName: 'flakeid_typed',
  columns: { id: { type: 'flakeid', primary: true, default: () => 'nextflake()' } },
});

const connection = {
  host: process.env.PGHOST,
  port: Number(process.env.PGPORT),
  username: process.env.FLAKE_APP_USER,
  database: 'flakeid_typeorm',
};

function options(entities) {
  return { type: 'postgres', ...connection, entities };
}

let dataSource;

before(async () => {
  dataSource = new DataSource(dataSourceOptions(connection));
  await dataSource.initialize();
});

after(async () => {
  await dataSource.destroy();
});

test('the application role is not a superuser', async () => {
  const [{ rolsuper }] = await dataSource.query(
    'SELECT rolsuper FROM pg_roles WHERE rolname = current_user');
  assert.equal(rolsuper, false);
});

test('TypeORM refuses an entity column of type flakeid', async () => {
  const refused = new DataSource(options([FlakeidTyped]));
  await assert.rejects(refused.initialize(), {
    name: 'DataTypeNotSupportedError',
    message: /Data type "flakeid" .* is not supported by "postgres" database/,
  });
});

test('migrations and synchronize made a flakeid and a bigint column', async () => {
  const rows = await dataSource.query(
    `SELECT c.relname AS table, format_type(a.atttypid, a.atttypmod) AS type,
            pg_get_expr(d.adbin, d.adrelid) AS default
       FROM pg_attribute a
       JOIN pg_class c ON c.oid = a.attrelid
       JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
      WHERE a.attname = 'id' AND c.relname IN ('events', 'orders')
      ORDER BY 1`);
  assert.deepEqual(rows, [
    { table: 'events', type: 'flakeid', default: 'nextflake()' },
    { table: 'orders', type: 'bigint', default: 'nextflake()' },
  ]);
});

for (const [entity, field] of [[Event, 'body'], [Order, 'item']]) {
  const name = entity.options.name;
  test(`${name}: saved IDs come back as exact strings above 2^53`, async () => {
    const repo = dataSource.getRepository(entity);
    const saved = await repo.save([1, 2, 3].map((n) => ({ [field]: `row ${n}` })));
    const ids = saved.map((row) => row.id);
    for (const id of ids) {
      assert.equal(typeof id, 'string');
      assert.match(id, /^[1-9][0-9]*$/);
      assert.ok(BigInt(id) > 2n ** 53n, `${id} is above 2^53`);
    }
    assert.ok(BigInt(ids[0]) < BigInt(ids[1]) && BigInt(ids[1]) < BigInt(ids[2]), 'ascending');
    assert.equal(JSON.parse(JSON.stringify(saved[0])).id, ids[0]);

    for (const id of ids) {
      const found = await repo.findOneBy({ id });
      assert.equal(found.id, id);
    }
  });

  test(`${name}: IDs decode to this server's node and now`, async () => {
    const repo = dataSource.getRepository(entity);
    const { id } = await repo.save({ [field]: 'decode me' });
    const decoded = await repo.createQueryBuilder('e')
      .select('flakeid_node(e.id)', 'node')
      .addSelect('flakeid_timestamp(e.id)', 'ts')
      .addSelect('to_json(e.id::flakeid)', 'json')
      .where('e.id = :id', { id })
      .getRawOne();
    assert.equal(decoded.node, SERVER_NODE_ID);
    assert.ok(Math.abs(decoded.ts.getTime() - Date.now()) < 60000, `${decoded.ts} is now`);
    assert.equal(decoded.json, id);
  });
}

test('synchronize leaves both tables alone', async () => {
  const { upQueries } = await dataSource.driver.createSchemaBuilder().log();
  assert.deepEqual(upQueries.map((q) => q.query), []);
});

test('without synchronize: false, synchronize would drop the flakeid column', async () => {
  const synced = new DataSource(options([SyncedEvent]));
  await synced.initialize();
  try {
    const { upQueries } = await synced.driver.createSchemaBuilder().log();
    const queries = upQueries.map((q) => q.query);
    assert.ok(queries.includes('ALTER TABLE "events" DROP COLUMN "id"'), queries.join('\n'));
  } finally {
    await synced.destroy();
  }
});
