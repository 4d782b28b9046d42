// Package events is flakeid through Go's pgx (v4) and lib/pq: the database
// makes each key with DEFAULT nextflake(), the application gets it back as
// an int64 from RETURNING, and decodes it in SQL.
//
//	CREATE TABLE events (id flakeid PRIMARY KEY DEFAULT nextflake(), body text NOT NULL);
package events

import (
	"context"
	"database/sql"
	"time"

	"github.com/jackc/pgtype"
	"github.com/jackc/pgx/v4"
	"github.com/jackc/pgx/v4/pgxpool"
)

// RegisterFlakeid tells pgx that a flakeid is an int8, so that it reads and
// writes flakeid values as int64, in binary.  Without it pgx reads a
// flakeid column only into a string.
func RegisterFlakeid(ctx context.Context, conn *pgx.Conn) error {
	var oid uint32
	if err := conn.QueryRow(ctx, "SELECT 'flakeid'::regtype::oid").Scan(&oid); err != nil {
		return err
	}
	conn.ConnInfo().RegisterDataType(pgtype.DataType{Value: &pgtype.Int8{}, Name: "flakeid", OID: oid})
	return nil
}

// Connect opens a pool whose connections know flakeid; the connection
// comes from the PG* variables.
func Connect(ctx context.Context) (*pgxpool.Pool, error) {
	config, err := pgxpool.ParseConfig("")
	if err != nil {
		return nil, err
	}
	config.AfterConnect = RegisterFlakeid
	return pgxpool.ConnectConfig(ctx, config)
}

// Decode gives the millisecond and the node an ID was made in.
func Decode(ctx context.Context, pool *pgxpool.Pool, id int64) (ts time.Time, node int32, err error) {
	err = pool.QueryRow(ctx, "SELECT flakeid_timestamp($1), flakeid_node($1)", id).Scan(&ts, &node)
	return
}

// Insert inserts one event per body; the new keys, in the order of the bodies.
func Insert(ctx context.Context, pool *pgxpool.Pool, bodies []string) ([]int64, error) {
	rows, err := pool.Query(ctx,
		"INSERT INTO events (body) SELECT unnest($1::text[]) RETURNING id", bodies)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// InsertPQ inserts an event through database/sql and lib/pq, which reads
// and writes every value as text: the new key scans into an int64.
func InsertPQ(ctx context.Context, db *sql.DB, body string) (id int64, err error) {
	err = db.QueryRowContext(ctx, "INSERT INTO events (body) VALUES ($1) RETURNING id", body).Scan(&id)
	return
}

// DecodePQ is Decode through lib/pq.
func DecodePQ(ctx context.Context, db *sql.DB, id int64) (ts time.Time, node int32, err error) {
	err = db.QueryRowContext(ctx, "SELECT flakeid_timestamp($1), flakeid_node($1)", id).Scan(&ts, &node)
	return
}
