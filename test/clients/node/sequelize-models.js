'use strict';
// flakeid keys with Sequelize: Event over a flakeid column (Sequelize passes
// the type name 'FLAKEID' through to SQL), Order over a bigint column, both
// with DEFAULT nextflake(), which Sequelize writes into each INSERT.  The
// application gets both keys as strings, exact above 2^53.

const { DataTypes } = require('sequelize');

function defineModels(sequelize) {
  const Event = sequelize.define('Event', {
    id: { type: 'FLAKEID', primaryKey: true, defaultValue: sequelize.fn('nextflake') },
    body: DataTypes.TEXT,
  }, { tableName: 'events', timestamps: false });
  const Order = sequelize.define('Order', {
    id: { type: DataTypes.BIGINT, primaryKey: true, defaultValue: sequelize.fn('nextflake') },
    item: DataTypes.TEXT,
  }, { tableName: 'orders', timestamps: false });
  return { Event, Order };
}

// The extension first (as a migration would make it), then the tables.
async function createTables(sequelize) {
  await sequelize.query('CREATE EXTENSION IF NOT EXISTS flakeid');
  await sequelize.sync();
}

module.exports = { defineModels, createTables };
