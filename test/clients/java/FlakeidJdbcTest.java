// flakeid through pgJDBC: IDs above 2^53 and next to 2^63 - 1 are read and
// written exactly as longs, in the text and in the binary protocol, one by
// one and in batches; getGeneratedKeys() and RETURNING give the keys of a
// multi-row insert in the order of the rows; decoded timestamps are
// OffsetDateTimes to the millisecond that the ID's bits say.  docs/clients.md
// shows Events.java.  It connects over TCP to 127.0.0.1 at
// PGPORT as the application's role (FLAKE_APP_USER, no superuser, with the
// password FLAKE_APP_PASSWORD) to its database flakeid_jdbc.
//
//   java -cp postgresql.jar:CLASSES FlakeidJdbcTest

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.Properties;
import org.postgresql.PGResultSetMetaData;
import org.postgresql.util.PGobject;

public final class FlakeidJdbcTest {
    static final String DATABASE = "flakeid_jdbc";
    static final int SERVER_NODE_ID = 42; // test/flakeid.conf
    static final Instant EPOCH = Instant.parse("2020-01-01T00:00:00Z"); // flakeid.epoch
    static final long ABOVE_2_53 = (1L << 53) + 1;
    static final long[] VALUES = {ABOVE_2_53, 1234567890123456789L, Long.MAX_VALUE - 1, Long.MAX_VALUE};

    // binaryTransfer=false: every parameter and result in text.
    // prepareThreshold=-1: every statement prepared on the server, and the
    // types that pgJDBC knows (bigint, not flakeid) in binary both ways; by
    // default only from a statement's fifth run on.
    enum Protocol {
        TEXT("binaryTransfer=false", 0),
        BINARY("prepareThreshold=-1", 1);

        final String options;
        final int bigintFormat; // the format of a bigint result: 0 text, 1 binary

        Protocol(String options, int bigintFormat) {
            this.options = options;
            this.bigintFormat = bigintFormat;
        }
    }

    static Connection connect(String options) throws SQLException {
        Properties props = new Properties();
        props.setProperty("user", System.getenv("FLAKE_APP_USER"));
        props.setProperty("password", System.getenv("FLAKE_APP_PASSWORD"));
        String url = "jdbc:postgresql://127.0.0.1:" + System.getenv("PGPORT") + "/" + DATABASE + "?" + options;
        return DriverManager.getConnection(url, props);
    }

    static void setUp() throws SQLException {
        try (Connection conn = connect(""); Statement st = conn.createStatement()) {
            System.out.println("pgJDBC " + conn.getMetaData().getDriverVersion() + ", Java " + Runtime.version());
            st.execute("CREATE EXTENSION IF NOT EXISTS flakeid");
            st.execute("CREATE TABLE events (id flakeid PRIMARY KEY DEFAULT nextflake(), body text NOT NULL)");
            st.execute("CREATE TABLE exact (how text, id flakeid, legacy bigint)");
        }
    }

    // --- the tests: every method whose name starts with "test"

    static void testRoleIsNotSuperuserAndOwnsItsDatabase() throws SQLException {
        try (Connection conn = connect(""); Statement st = conn.createStatement();
                ResultSet rs = st.executeQuery(
                        "SELECT rolsuper, datdba = r.oid FROM pg_roles r, pg_database"
                                + " WHERE rolname = current_user AND datname = current_database()")) {
            rs.next();
            check(!rs.getBoolean(1), "the role is no superuser");
            check(rs.getBoolean(2), "the role owns its database");
        }
    }

    static void testADoubleCannotHoldTheseIds() {
        // what reading through a double would do: the tests below would see it
        check((long) (double) ABOVE_2_53 != ABOVE_2_53, "2^53 + 1 rounds in a double");
        check((long) (double) (Long.MAX_VALUE - 1) != Long.MAX_VALUE - 1, "2^63 - 2 rounds in a double");
    }

    static void testIdsWrittenAndReadExactly() throws SQLException {
        for (Protocol p : Protocol.values()) {
            try (Connection conn = connect(p.options)) {
                String how = p + " ";
                // a batch of setLong, then one by one with setObject(Long) and
                // setObject(String, Types.OTHER)
                try (PreparedStatement ins = conn.prepareStatement("INSERT INTO exact VALUES (?, ?, ?)")) {
                    for (long v : VALUES) {
                        ins.setString(1, how + "setLong batch");
                        ins.setLong(2, v);
                        ins.setLong(3, v);
                        ins.addBatch();
                    }
                    int[] counts = ins.executeBatch();
                    equal(VALUES.length, counts.length, "batch statements");
                    for (long v : VALUES) {
                        ins.setString(1, how + "setObject");
                        ins.setObject(2, v);
                        ins.setObject(3, v);
                        equal(1, ins.executeUpdate(), "rows inserted");
                        ins.setString(1, how + "setObject OTHER");
                        ins.setObject(2, Long.toString(v), Types.OTHER);
                        ins.setObject(3, v);
                        equal(1, ins.executeUpdate(), "rows inserted");
                    }
                }
                try (PreparedStatement q = conn.prepareStatement(
                        "SELECT id, id::bigint, id::text, legacy FROM exact WHERE how = ? ORDER BY 1")) {
                    for (String way : List.of("setLong batch", "setObject", "setObject OTHER")) {
                        q.setString(1, how + way);
                        // twice, so that a statement pgJDBC prepares reads the same
                        for (int run = 0; run < 2; run++) {
                            List<Long> ids = new ArrayList<>();
                            try (ResultSet rs = q.executeQuery()) {
                                PGResultSetMetaData md = rs.getMetaData().unwrap(PGResultSetMetaData.class);
                                equal("flakeid", rs.getMetaData().getColumnTypeName(1), "column type");
                                equal(0, md.getFormat(1), p + ": a flakeid is read in text");
                                equal(p.bigintFormat, md.getFormat(2), p + ": format of id::bigint");
                                equal(p.bigintFormat, md.getFormat(4), p + ": format of a bigint column");
                                while (rs.next()) {
                                    long id = rs.getLong(1);
                                    equal(id, rs.getLong(2), "id::bigint");
                                    equal(Long.toString(id), rs.getString(3), "id::text");
                                    equal(id, rs.getLong(4), "the bigint column");
                                    ids.add(id);
                                }
                            }
                            equal(asList(VALUES), ids, p + " " + way);
                        }
                    }
                }
                try (PreparedStatement q = conn.prepareStatement("SELECT count(*) FROM exact WHERE id = ? AND how LIKE ?")) {
                    for (long v : VALUES) {
                        q.setLong(1, v);
                        q.setString(2, how + "%");
                        try (ResultSet rs = q.executeQuery()) {
                            rs.next();
                            equal(3L, rs.getLong(1), p + ": rows WHERE id = " + v);
                        }
                    }
                }
            }
        }
    }

    static void testGetObjectGivesTheExactText() throws SQLException {
        for (Protocol p : Protocol.values()) {
            try (Connection conn = connect(p.options);
                    PreparedStatement q = conn.prepareStatement("SELECT ?::flakeid")) {
                q.setLong(1, Long.MAX_VALUE - 1);
                try (ResultSet rs = q.executeQuery()) {
                    rs.next();
                    PGobject value = (PGobject) rs.getObject(1);
                    equal("flakeid", value.getType(), "PGobject type");
                    equal(Long.toString(Long.MAX_VALUE - 1), value.getValue(), p + ": PGobject value");
                    Long asLong = null;
                    try {
                        asLong = rs.getObject(1, Long.class); // pgJDBC 42.5 refuses
                    } catch (SQLException e) {
                        // no value rather than a wrong one
                    }
                    check(asLong == null || asLong == Long.MAX_VALUE - 1, "getObject(1, Long.class): " + asLong);
                }
            }
        }
    }

    static void testBadParametersFailWithTheSqlState() throws SQLException {
        for (Protocol p : Protocol.values()) {
            try (Connection conn = connect(p.options)) {
                try (PreparedStatement q = conn.prepareStatement("INSERT INTO exact (how, id) VALUES ('bad', ?)")) {
                    q.setLong(1, -1);
                    expectSqlState("22003", q::executeUpdate, p + ": setLong(-1)");
                    // a String parameter is a varchar: setObject(..., Types.OTHER) passes text
                    q.setString(1, Long.toString(ABOVE_2_53));
                    expectSqlState("42804", q::executeUpdate, p + ": setString");
                }
                // and in a comparison no operator takes a flakeid and a varchar
                try (PreparedStatement q = conn.prepareStatement("SELECT count(*) FROM exact WHERE id = ?")) {
                    q.setString(1, Long.toString(ABOVE_2_53));
                    expectSqlState("42883", q::executeQuery, p + ": setString in WHERE id = ?");
                }
            }
        }
    }

    static void testBinaryTransferOfFlakeidNeverGivesAWrongValue() throws SQLException {
        // pgJDBC asks for binary flakeid results if told to; 42.5 cannot read them then
        long oid;
        try (Connection conn = connect(""); Statement st = conn.createStatement();
                ResultSet rs = st.executeQuery("SELECT 'flakeid'::regtype::oid")) {
            rs.next();
            oid = rs.getLong(1);
        }
        try (Connection conn = connect("prepareThreshold=-1&binaryTransferEnable=" + oid);
                PreparedStatement q = conn.prepareStatement("SELECT ?::flakeid")) {
            q.setLong(1, ABOVE_2_53);
            try (ResultSet rs = q.executeQuery()) {
                rs.next();
                equal(1, rs.getMetaData().unwrap(PGResultSetMetaData.class).getFormat(1), "format");
                Long number = null;
                try {
                    number = rs.getLong(1);
                } catch (SQLException e) {
                    // cannot be read: no value rather than a wrong one
                }
                String text = ((PGobject) rs.getObject(1)).getValue();
                check(number == null || number == ABOVE_2_53, "getLong of a binary flakeid: " + number);
                check(text == null || text.equals(Long.toString(ABOVE_2_53)), "getObject of a binary flakeid: " + text);
                if (conn.getMetaData().getDriverVersion().startsWith("42.5.")) {
                    check(number == null && text == null, "pgJDBC 42.5 reads no binary flakeid");
                }
            }
        }
    }

    static void testGeneratedKeysOfAMultiRowInsertInOrder() throws SQLException {
        for (Protocol p : Protocol.values()) {
            try (Connection conn = connect(p.options)) {
                List<String> bodies = bodies(p + " multi-row", 5);
                List<Long> ids = new ArrayList<>();
                try (PreparedStatement ins = conn.prepareStatement(
                        "INSERT INTO events (body) VALUES (?), (?), (?), (?), (?)", new String[] {"id"})) {
                    for (int i = 0; i < bodies.size(); i++) {
                        ins.setString(i + 1, bodies.get(i));
                    }
                    equal(5, ins.executeUpdate(), "rows inserted");
                    try (ResultSet keys = ins.getGeneratedKeys()) {
                        while (keys.next()) {
                            ids.add(keys.getLong(1));
                        }
                    }
                }
                checkKeys(conn, ids, bodies);
            }
        }
    }

    static void testBatchKeysInOrder() throws SQLException {
        for (Protocol p : Protocol.values()) {
            for (String rewrite : List.of("false", "true")) {
                try (Connection conn = connect(p.options + "&reWriteBatchedInserts=" + rewrite)) {
                    List<String> bodies = bodies(p + " batch rewrite " + rewrite, 20);
                    checkKeys(conn, Events.insert(conn, bodies), bodies);
                }
            }
        }
    }

    static void testReturningIdsInOrder() throws SQLException {
        for (Protocol p : Protocol.values()) {
            try (Connection conn = connect(p.options);
                    PreparedStatement ins = conn.prepareStatement(
                            "INSERT INTO events (body) SELECT ? || g FROM generate_series(1, 10) g"
                                    + " RETURNING id, id::bigint, body")) {
                String prefix = p + " returning ";
                ins.setString(1, prefix);
                List<Long> ids = new ArrayList<>();
                List<String> bodies = new ArrayList<>();
                try (ResultSet rs = ins.executeQuery()) {
                    equal(p.bigintFormat, rs.getMetaData().unwrap(PGResultSetMetaData.class).getFormat(2), "format");
                    while (rs.next()) {
                        equal(rs.getLong(1), rs.getLong(2), "id and id::bigint");
                        ids.add(rs.getLong(1));
                        bodies.add(rs.getString(3));
                    }
                }
                equal(bodies(prefix.trim(), 10), bodies, "rows in the order of the select");
                checkKeys(conn, ids, bodies);
            }
        }
    }

    static void testDecodedToTheMillisecond() throws SQLException {
        for (Protocol p : Protocol.values()) {
            try (Connection conn = connect(p.options)) {
                for (long id : Events.insert(conn, bodies(p + " decode", 3))) {
                    Events.Decoded d = Events.decode(conn, id);
                    equal(EPOCH.plusMillis(id >> 22), d.ts().toInstant(), p + ": timestamp of " + id);
                    equal(0, d.ts().getNano() % 1_000_000, "whole milliseconds");
                    equal((int) ((id >> 12) & 1023), d.node(), "node of " + id);
                    equal(SERVER_NODE_ID, d.node(), "this server's node id");
                    equal((int) (id & 4095), d.sequence(), "sequence of " + id);
                    Duration age = Duration.between(d.ts().toInstant(), Instant.now()).abs();
                    check(age.compareTo(Duration.ofMinutes(1)) < 0, "made within a minute: " + d.ts());
                }
            }
        }
    }

    // --- helpers

    static List<String> bodies(String prefix, int n) {
        List<String> bodies = new ArrayList<>();
        for (int i = 1; i <= n; i++) {
            bodies.add(prefix + " " + i);
        }
        return bodies;
    }

    static List<Long> asList(long[] values) {
        return Arrays.stream(values).boxed().toList();
    }

    /** The keys of rows inserted in the order of bodies: one each, new,
     * ascending, above 2^53, and each the key of its row. */
    static void checkKeys(Connection conn, List<Long> ids, List<String> bodies) throws SQLException {
        equal(bodies.size(), ids.size(), "one key per row");
        for (int i = 1; i < ids.size(); i++) {
            check(ids.get(i) > ids.get(i - 1), "ascending keys: " + ids);
        }
        check(ids.get(0) > ABOVE_2_53, "keys above 2^53: " + ids.get(0));
        try (PreparedStatement q = conn.prepareStatement("SELECT body FROM events WHERE id = ?")) {
            for (int i = 0; i < ids.size(); i++) {
                q.setLong(1, ids.get(i));
                try (ResultSet rs = q.executeQuery()) {
                    check(rs.next(), "a row with key " + ids.get(i));
                    equal(bodies.get(i), rs.getString(1), "the row of key " + ids.get(i));
                }
            }
        }
    }

    static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    static void equal(Object expected, Object actual, String what) {
        if (!Objects.equals(expected, actual)) {
            throw new AssertionError(what + ": expected " + expected + ", got " + actual);
        }
    }

    interface Call {
        void run() throws SQLException;
    }

    /** The call fails with the SQLSTATE (any SQLException where it is null). */
    static void expectSqlState(String sqlState, Call call, String what) {
        try {
            call.run();
        } catch (SQLException e) {
            if (sqlState != null) {
                equal(sqlState, e.getSQLState(), what + " (" + e.getMessage() + ")");
            }
            return;
        }
        throw new AssertionError(what + " did not fail");
    }

    public static void main(String[] args) throws Exception {
        setUp();
        List<Method> tests = new ArrayList<>();
        for (Method m : FlakeidJdbcTest.class.getDeclaredMethods()) {
            if (m.getName().startsWith("test")) {
                tests.add(m);
            }
        }
        tests.sort(Comparator.comparing(Method::getName));
        int failed = 0;
        for (Method m : tests) {
            try {
                m.invoke(null);
                System.out.println("ok - " + m.getName());
            } catch (InvocationTargetException e) {
                failed++;
                System.out.println("not ok - " + m.getName() + ": " + e.getCause());
            }
        }
        System.out.println("jdbc: " + (tests.size() - failed) + " passed, " + failed + " failed");
        System.exit(failed == 0 ? 0 : 1);
    }
}
