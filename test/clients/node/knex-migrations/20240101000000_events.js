// The flakeid extension and a table whose key it fills in; down removes
// both.
exports.up = async (knex) => {
  await knex.raw('CREATE EXTENSION IF NOT EXISTS flakeid');
  await knex.schema.createTable('events', (table) => {
    table.specificType('id', 'flakeid').primary().defaultTo(knex.raw('nextflake()'));
    table.text('body').notNullable();
  });
};

exports.down = async (knex) => {
  await knex.schema.dropTable('events');
  await knex.raw('DROP EXTENSION flakeid');
};
