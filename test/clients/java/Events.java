// flakeid through JDBC (pgJDBC): the database makes each key with DEFAULT
// nextflake(), the application gets it back as a long from
// getGeneratedKeys(), and decodes it in SQL.
//
//   CREATE TABLE events (id flakeid PRIMARY KEY DEFAULT nextflake(), body text NOT NULL);

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;

final class Events {
    private Events() {}

    /** Inserts one event per body in one batch; the new keys, in the order of the bodies. */
    static List<Long> insert(Connection conn, List<String> bodies) throws SQLException {
        List<Long> ids = new ArrayList<>();
        try (PreparedStatement insert = conn.prepareStatement(
                "INSERT INTO events (body) VALUES (?)", new String[] {"id"})) {
            for (String body : bodies) {
                insert.setString(1, body);
                insert.addBatch();
            }
            insert.executeBatch();
            try (ResultSet keys = insert.getGeneratedKeys()) {
                while (keys.next()) {
                    ids.add(keys.getLong("id")); // a long holds every flakeid exactly
                }
            }
        }
        return ids;
    }

    record Decoded(OffsetDateTime ts, int node, int sequence) {}

    /** When, where and as which of its millisecond an ID was made. */
    static Decoded decode(Connection conn, long id) throws SQLException {
        try (PreparedStatement query = conn.prepareStatement(
                "SELECT flakeid_timestamp(?), flakeid_node(?), flakeid_sequence(?)")) {
            for (int i = 1; i <= 3; i++) {
                query.setLong(i, id);
            }
            try (ResultSet rs = query.executeQuery()) {
                rs.next();
                return new Decoded(rs.getObject(1, OffsetDateTime.class), rs.getInt(2), rs.getInt(3));
            }
        }
    }
}
