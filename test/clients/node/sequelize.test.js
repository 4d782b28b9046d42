'use strict';
// flakeid through Sequelize 6, as docs/clients.md shows it: the models of
// sequelize-models.js, a model attribute of type 'FLAKEID' (Sequelize
// passes an unknown type name through to SQL) and one of type BIGINT, both
// with DEFAULT nextflake(), made by sync().  It connects as the application's role (FLAKE_APP_USER, no
// superuser) to its database flakeid_sequelize, through PGHOST and PGPORT.

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { Sequelize, DataTypes } = require('sequelize');
const { defineModels, createTables } = require('./sequelize-models');

const SERVER_NODE_ID = 42; // test/flakeid.conf

const sequelize = new Sequelize('flakeid_sequelize', process.env.FLAKE_APP_USER, null, {
  dialect: 'postgres',
  host: process.env.PGHOST,
  port: Number(process.env.PGPORT),
  logging: false,
});

const { Event, Order } = defineModels(sequelize);

async function columnTypes(table) {
  const [rows] = await sequelize.query(
    `SELECT attname, format_type(atttypid, atttypmod) AS type FROM pg_attribute
      WHERE attrelid = '${table}'::regclass AND attnum > 0 AND NOT attisdropped
      ORDER BY attnum`);
  return Object.fromEntries(rows.map((row) => [row.attname, row.type]));
}

before(async () => {
  await createTables(sequelize);
});

after(async () => {
  await sequelize.close();
});

test('the application role is not a superuser', async () => {
  const [[{ rolsuper }]] = await sequelize.query(
    'SELECT rolsuper FROM pg_roles WHERE rolname = current_user');
  assert.equal(rolsuper, false);
});

test('sync() made a flakeid and a bigint column', async () => {
  assert.equal((await columnTypes('events')).id, 'flakeid');
  assert.equal((await columnTypes('orders')).id, 'bigint');
});

for (const [model, field] of [[Event, 'body'], [Order, 'item']]) {
  test(`${model.name}: created IDs come back as exact strings above 2^53`, async () => {
    const one = await model.create({ [field]: 'one' });
    const more = await model.bulkCreate([{ [field]: 'two' }, { [field]: 'three' }]);
    const ids = [one, ...more].map((row) => row.id);
    for (const id of ids) {
      assert.equal(typeof id, 'string');
      assert.match(id, /^[1-9][0-9]*$/);
      assert.ok(BigInt(id) > 2n ** 53n, `${id} is above 2^53`);
    }
    assert.ok(BigInt(ids[0]) < BigInt(ids[1]) && BigInt(ids[1]) < BigInt(ids[2]), 'ascending');
    assert.equal(JSON.parse(JSON.stringify(one)).id, ids[0]);

    for (const id of ids) {
      const found = await model.findByPk(id);
      assert.equal(found.id, id);
      assert.equal((await model.findOne({ where: { id: BigInt(id) } })).id, id);
    }
  });

  test(`${model.name}: IDs decode to this server's node and now`, async () => {
    const { id } = await model.create({ [field]: 'decode me' });
    const decoded = await model.findOne({
      attributes: [
        [sequelize.fn('flakeid_node', sequelize.col('id')), 'node'],
        [sequelize.fn('flakeid_timestamp', sequelize.col('id')), 'ts'],
      ],
      where: { id },
      raw: true,
    });
    assert.equal(decoded.node, SERVER_NODE_ID);
    assert.ok(Math.abs(decoded.ts.getTime() - Date.now()) < 60000, `${decoded.ts} is now`);
  });
}

test('sync({ alter: true }) keeps both key columns as they are', async () => {
  await sequelize.sync({ alter: true });
  assert.equal((await columnTypes('events')).id, 'flakeid');
  assert.equal((await columnTypes('orders')).id, 'bigint');
  const { id } = await Event.create({ body: 'after alter' });
  assert.ok(BigInt(id) > 2n ** 53n);
});

test('sync({ alter: true }) turns a flakeid column declared BIGINT into bigint', async () => {
  const define = (type) => sequelize.define('Reply', {
    eventId: { type, allowNull: false },
  }, { tableName: 'replies', timestamps: false });
  await define('FLAKEID').sync();
  assert.equal((await columnTypes('replies')).eventId, 'flakeid');
  await define(DataTypes.BIGINT).sync({ alter: true });
  assert.equal((await columnTypes('replies')).eventId, 'bigint');
  await define('FLAKEID').sync({ alter: true });
  assert.equal((await columnTypes('replies')).eventId, 'flakeid');
});
