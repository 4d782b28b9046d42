// The flakeid extension and a table whose key it fills in; down removes
// both.
exports.up = (pgm) => {
  pgm.createExtension('flakeid', { ifNotExists: true });
  pgm.createTable('events', {
    id: { type: 'flakeid', primaryKey: true, default: pgm.func('nextflake()') },
    body: { type: 'text', notNull: true },
  });
};

exports.down = (pgm) => {
  pgm.dropTable('events');
  pgm.dropExtension('flakeid');
};
