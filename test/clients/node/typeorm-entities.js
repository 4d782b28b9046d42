'use strict';
// flakeid keys with TypeORM, in JavaScript (EntitySchema).  TypeORM refuses
// a column of type flakeid, so both entities declare their key as bigint:
// Event over a flakeid column that a migration makes, and that synchronize
// must leave alone; Order over a bigint column with DEFAULT nextflake()
// that synchronize makes.  The application gets both keys as strings,
// exact above 2^53.

const { EntitySchema } = require('typeorm');

class CreateEvents1700000000000 {
  async up(queryRunner) {
    await queryRunner.query('CREATE EXTENSION IF NOT EXISTS flakeid');
    await queryRunner.query(
      'CREATE TABLE events (id flakeid PRIMARY KEY DEFAULT nextflake(), body text NOT NULL)');
  }

  async down(queryRunner) {
    await queryRunner.query('DROP TABLE events');
  }
}

const Event = new EntitySchema({
  name: 'Event',
  tableName: 'events',
  synchronize: false, // else synchronize replaces the flakeid column by a bigint one
  columns: {
    id: { type: 'bigint', primary: true, default: () => 'nextflake()' },
    body: { type: 'text' },
  },
});

const Order = new EntitySchema({
  name: 'Order',
  tableName: 'orders',
  columns: {
    id: { type: 'bigint', primary: true, default: () => 'nextflake()' },
    item: { type: 'text' },
  },
});

// The options of a DataSource over both: the migration runs first, since
// synchronize needs nextflake() for the orders table.
function dataSourceOptions(connection) {
  return {
    type: 'postgres',
    ...connection,
    entities: [Event, Order],
    migrations: [CreateEvents1700000000000],
    migrationsRun: true,
    synchronize: true,
  };
}

module.exports = { CreateEvents1700000000000, Event, Order, dataSourceOptions };
