// flakeid through pgx and lib/pq: IDs above 2^53 and next to 2^63 - 1 are
// read and written exactly as int64, by pgx in binary (flakeid registered as
// an int8, or cast to bigint) and as text (flakeid unregistered, into a
// string), by lib/pq as text, one by one and in a pgx Batch; RETURNING gives
// the keys of a multi-row insert in the order of the rows; decoded
// timestamps are time.Times to the millisecond that the ID's bits say.  The
// connection comes from PGHOST, PGPORT, PGUSER and PGDATABASE: the
// application's role (no superuser) and its database flakeid_go.
package events

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgconn"
	"github.com/jackc/pgx/v4"
	"github.com/jackc/pgx/v4/pgxpool"
	"github.com/lib/pq"
)

const serverNodeID = 42 // test/flakeid.conf

const above253 = int64(1)<<53 + 1

var (
	epoch  = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC) // flakeid.epoch
	values = []int64{above253, 1234567890123456789, 1<<63 - 2, 1<<63 - 1}
	ctx    = context.Background()
	pool   *pgxpool.Pool // knows flakeid (RegisterFlakeid)
	plain  *pgx.Conn     // does not
	db     *sql.DB       // lib/pq
)

// Result formats of the protocol.
const (
	text   = 0
	binary = 1
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if plain, err = pgx.Connect(ctx, ""); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer plain.Close(ctx)
	for _, stmt := range []string{
		"CREATE EXTENSION IF NOT EXISTS flakeid",
		"CREATE TABLE events (id flakeid PRIMARY KEY DEFAULT nextflake(), body text NOT NULL)",
		"CREATE TABLE exact (how text, id flakeid, legacy bigint)",
	} {
		if _, err = plain.Exec(ctx, stmt); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	if pool, err = Connect(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer pool.Close()
	if db, err = sql.Open("postgres", ""); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer db.Close()
	return m.Run()
}

func TestRoleIsNotSuperuserAndOwnsItsDatabase(t *testing.T) {
	var super, owner bool
	must(t, plain.QueryRow(ctx, "SELECT rolsuper, datdba = r.oid FROM pg_roles r, pg_database"+
		" WHERE rolname = current_user AND datname = current_database()").Scan(&super, &owner))
	if super || !owner {
		t.Fatalf("superuser %v, owns its database %v", super, owner)
	}
}

func TestFloat64CannotHoldTheseIDs(t *testing.T) {
	// what reading through a float64 would do: the tests below would see it
	if int64(float64(above253)) == above253 {
		t.Error("2^53 + 1 fits a float64")
	}
	if float64(values[2]) != float64(values[3]) {
		t.Error("a float64 tells 2^63 - 2 from 2^63 - 1")
	}
}

func TestPgxUnregisteredReadsFlakeidAsText(t *testing.T) {
	for _, v := range values {
		rows, err := plain.Query(ctx, "SELECT $1::flakeid, $1::flakeid::bigint", v)
		must(t, err)
		var s string
		var n int64
		for rows.Next() {
			formats(t, rows, text, binary)
			must(t, rows.Scan(&s, &n))
		}
		must(t, rows.Err())
		if s != strconv.FormatInt(v, 10) || n != v {
			t.Errorf("wrote %d, read %q and %d", v, s, n)
		}
		err = plain.QueryRow(ctx, "SELECT $1::flakeid", v).Scan(&n)
		if err == nil || !strings.Contains(err.Error(), "cannot be scanned into *int64") {
			t.Errorf("an unregistered flakeid into an int64: %v", err)
		}
	}
	writeRead(t, "pgx unregistered", pgxExec(plain))
}

func TestPgxRegisteredReadsFlakeidAsInt64InBinary(t *testing.T) {
	for _, v := range values {
		rows, err := pool.Query(ctx, "SELECT $1::flakeid, $1::flakeid::bigint", v)
		must(t, err)
		var id, n int64
		for rows.Next() {
			formats(t, rows, binary, binary)
			must(t, rows.Scan(&id, &n))
		}
		must(t, rows.Err())
		if id != v || n != v {
			t.Errorf("wrote %d, read %d and %d", v, id, n)
		}
	}
	writeRead(t, "pgx registered", pgxExec(pool))
	sqlState(t, pool.QueryRow(ctx, "SELECT $1::flakeid", int64(-1)).Scan(new(int64)), "22003")
}

func TestPgxBatch(t *testing.T) {
	for _, c := range []struct {
		name string
		conn interface {
			SendBatch(context.Context, *pgx.Batch) pgx.BatchResults
		}
		returning string
	}{
		{"pgx registered batch", pool, "id"},
		{"pgx unregistered batch", plain, "id::bigint"},
	} {
		bodies := numbered(c.name, 10)
		batch := &pgx.Batch{}
		for _, v := range values {
			batch.Queue("INSERT INTO exact VALUES ($1, $2, $3)", c.name, v, v)
		}
		for _, body := range bodies {
			batch.Queue("INSERT INTO events (body) VALUES ($1) RETURNING "+c.returning, body)
		}
		results := c.conn.SendBatch(ctx, batch)
		for range values {
			_, err := results.Exec()
			must(t, err)
		}
		ids := make([]int64, len(bodies))
		for i := range bodies {
			must(t, results.QueryRow().Scan(&ids[i]))
		}
		must(t, results.Close())
		checkKeys(t, ids, bodies)
		checkExact(t, c.name)
	}
}

func TestPgxReturningKeysInOrder(t *testing.T) {
	bodies := numbered("pgx returning", 10)
	ids, err := Insert(ctx, pool, bodies)
	must(t, err)
	checkKeys(t, ids, bodies)
}

func TestPgxDecode(t *testing.T) {
	ids, err := Insert(ctx, pool, numbered("pgx decode", 3))
	must(t, err)
	for _, id := range ids {
		ts, node, err := Decode(ctx, pool, id)
		must(t, err)
		checkDecoded(t, id, ts, node)
	}
}

func TestPQReadsAndWritesInt64(t *testing.T) {
	writeRead(t, "lib/pq", func(sql string, args ...interface{}) error {
		_, err := db.ExecContext(ctx, sql, args...)
		return err
	})
	sqlState(t, db.QueryRowContext(ctx, "SELECT $1::flakeid", int64(-1)).Scan(new(int64)), "22003")
}

func TestPQReturningKeysInOrder(t *testing.T) {
	bodies := numbered("lib/pq returning", 10)
	rows, err := db.QueryContext(ctx,
		"INSERT INTO events (body) SELECT unnest($1::text[]) RETURNING id", pq.Array(bodies))
	must(t, err)
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		must(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	must(t, rows.Err())
	checkKeys(t, ids, bodies)
}

func TestPQDecode(t *testing.T) {
	for _, body := range numbered("lib/pq decode", 3) {
		id, err := InsertPQ(ctx, db, body)
		must(t, err)
		checkKeys(t, []int64{id}, []string{body})
		ts, node, err := DecodePQ(ctx, db, id)
		must(t, err)
		checkDecoded(t, id, ts, node)
	}
}

// writeRead writes each of values into the table exact through exec, as a
// flakeid and a bigint parameter, and reads them back with pgx (registered,
// and cast to bigint) and lib/pq, by value and by key.
func writeRead(t *testing.T, how string, exec func(sql string, args ...interface{}) error) {
	t.Helper()
	for _, v := range values {
		must(t, exec("INSERT INTO exact VALUES ($1, $2, $3)", how, v, v))
	}
	checkExact(t, how)
}

// pgxExec is conn's Exec, for writeRead.
func pgxExec(conn interface {
	Exec(context.Context, string, ...interface{}) (pgconn.CommandTag, error)
}) func(string, ...interface{}) error {
	return func(sql string, args ...interface{}) error {
		_, err := conn.Exec(ctx, sql, args...)
		return err
	}
}

func checkExact(t *testing.T, how string) {
	t.Helper()
	const query = "SELECT id, id::bigint, id::text, legacy FROM exact WHERE how = $1 ORDER BY 1"
	var ids, pqIDs []int64
	rows, err := pool.Query(ctx, query, how)
	must(t, err)
	for rows.Next() {
		formats(t, rows, binary, binary)
		ids = append(ids, scanSame(t, rows))
	}
	must(t, rows.Err())
	pqRows, err := db.QueryContext(ctx, query, how)
	must(t, err)
	defer pqRows.Close()
	for pqRows.Next() {
		pqIDs = append(pqIDs, scanSame(t, pqRows))
	}
	must(t, pqRows.Err())
	if fmt.Sprint(ids) != fmt.Sprint(values) || fmt.Sprint(pqIDs) != fmt.Sprint(values) {
		t.Errorf("%s: wrote %d, read %d with pgx and %d with lib/pq", how, values, ids, pqIDs)
	}
	for _, v := range values {
		var n int
		must(t, pool.QueryRow(ctx, "SELECT count(*) FROM exact WHERE how = $1 AND id = $2", how, v).Scan(&n))
		var pqN int
		must(t, db.QueryRowContext(ctx, "SELECT count(*) FROM exact WHERE how = $1 AND id = $2", how, v).Scan(&pqN))
		if n != 1 || pqN != 1 {
			t.Errorf("%s: WHERE id = %d found %d rows with pgx and %d with lib/pq", how, v, n, pqN)
		}
	}
}

// scanSame scans a row of id, id::bigint, id::text, legacy: the same ID.
func scanSame(t *testing.T, row interface{ Scan(...interface{}) error }) int64 {
	t.Helper()
	var id, n, legacy int64
	var s string
	must(t, row.Scan(&id, &n, &s, &legacy))
	if n != id || s != strconv.FormatInt(id, 10) || legacy != id {
		t.Errorf("one ID read as %d, %d, %q and %d", id, n, s, legacy)
	}
	return id
}

// checkKeys: the keys of rows inserted in the order of bodies are one each,
// ascending, above 2^53, and each the key of its row.
func checkKeys(t *testing.T, ids []int64, bodies []string) {
	t.Helper()
	if len(ids) != len(bodies) {
		t.Fatalf("%d keys for %d rows", len(ids), len(bodies))
	}
	for i, id := range ids {
		if i > 0 && id <= ids[i-1] {
			t.Errorf("keys not ascending: %d", ids)
		}
		if id <= above253 {
			t.Errorf("key %d not above 2^53", id)
		}
		var body string
		must(t, pool.QueryRow(ctx, "SELECT body FROM events WHERE id = $1", id).Scan(&body))
		if body != bodies[i] {
			t.Errorf("key %d is the key of %q, not of %q", id, body, bodies[i])
		}
	}
}

func checkDecoded(t *testing.T, id int64, ts time.Time, node int32) {
	t.Helper()
	if want := epoch.Add(time.Duration(id>>22) * time.Millisecond); !ts.Equal(want) {
		t.Errorf("%d: timestamp %v, its bits say %v", id, ts, want)
	}
	if ts.Nanosecond()%int(time.Millisecond) != 0 {
		t.Errorf("%d: timestamp %v not in whole milliseconds", id, ts)
	}
	if node != int32((id>>12)&1023) || node != serverNodeID {
		t.Errorf("%d: node %d", id, node)
	}
	if age := time.Since(ts); age > time.Minute || age < -time.Minute {
		t.Errorf("%d: made %v ago", id, age)
	}
}

// formats checks the format of the first len(want) columns of rows.
func formats(t *testing.T, rows pgx.Rows, want ...int16) {
	t.Helper()
	for i, fd := range rows.FieldDescriptions()[:len(want)] {
		if fd.Format != want[i] {
			t.Errorf("column %s: format %d, want %d", fd.Name, fd.Format, want[i])
		}
	}
}

func sqlState(t *testing.T, err error, want string) {
	t.Helper()
	var pgErr *pgconn.PgError
	var pqErr *pq.Error
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == want:
	case errors.As(err, &pqErr) && string(pqErr.Code) == want:
	default:
		t.Errorf("want SQLSTATE %s, got %v", want, err)
	}
}

func numbered(prefix string, n int) []string {
	bodies := make([]string, n)
	for i := range bodies {
		bodies[i] = fmt.Sprintf("%s %d", prefix, i+1)
	}
	return bodies
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
