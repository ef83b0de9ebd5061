// JDBC smoke test: the Arrow Flight SQL JDBC driver (Maven Central,
// org.apache.arrow:flight-sql-jdbc-driver) against a Lakestream node.
//
//   java -Duser.timezone=UTC --add-opens=java.base/java.nio=ALL-UNNAMED \
//        -cp flight-sql-jdbc-driver-<v>.jar:<classes> Smoke <jdbc-url> <table>
//
// <table> has columns (id BIGINT, amount DOUBLE, kind VARCHAR, ts TIMESTAMPTZ)
// and was filled by the caller (tests/interop/test_jdbc.py, through ADBC).
// The program creates a table of its own, reads <table> whole (the scan
// path), runs an aggregate and a query with bound parameters (DuckDB), and
// prints every value as tab-separated lines the caller compares with what
// it ingested:
//
//   meta    <product name>    <tables found>
//   created <rows in the new table>
//   row     <id> <amount> <kind> <ts as µs since the epoch>
//   agg     <kind> <count> <sum of amount>
//   param   <count>
//   ok      <rows read>
//
// It checks what it can itself (column names, row counts agreeing) and
// exits with status 1 and the exception on the first failure.
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.Calendar;
import java.util.TimeZone;

public class Smoke {
  public static void main(String[] args) {
    if (args.length != 2) {
      System.err.println("usage: Smoke <jdbc-url> <table>");
      System.exit(2);
    }
    try {
      run(args[0], args[1]);
    } catch (Throwable e) {
      e.printStackTrace();
      // Exit explicitly: after a failed read the driver cannot close its
      // streams and leaves non-daemon threads behind, and the JVM would
      // not end on its own (measured with 18.3.0).
      System.exit(1);
    }
    System.exit(0);
  }

  static void run(String url, String table) throws SQLException {
    try (Connection conn = DriverManager.getConnection(url)) {
      meta(conn, table);
      create(conn);
      long scanned = scan(conn, table);
      long aggregated = aggregate(conn, table);
      check(scanned == aggregated, "SELECT * read " + scanned + " rows, the aggregate counts " + aggregated);
      params(conn, table);
      System.out.println("ok\t" + scanned);
    }
  }

  static void meta(Connection conn, String table) throws SQLException {
    DatabaseMetaData md = conn.getMetaData();
    int found = 0;
    try (ResultSet rs = md.getTables(null, null, table, null)) {
      while (rs.next()) {
        check(table.equals(rs.getString("TABLE_NAME")), "getTables returned " + rs.getString("TABLE_NAME"));
        found++;
      }
    }
    System.out.println("meta\t" + md.getDatabaseProductName() + "\t" + found);
  }

  // DDL through JDBC, and a query over the new, empty table.
  static void create(Connection conn) throws SQLException {
    try (Statement st = conn.createStatement()) {
      st.execute("CREATE TABLE IF NOT EXISTS jdbc_made (id BIGINT NOT NULL, note VARCHAR)");
      try (ResultSet rs = st.executeQuery("SELECT count(*) AS n FROM jdbc_made")) {
        check(rs.next(), "count(*) returned no row");
        System.out.println("created\t" + rs.getLong(1));
      }
    }
  }

  // SELECT * is Lakestream's scan path: the stored batches, which are
  // compressed unless the server sends them plain to this client.
  static long scan(Connection conn, String table) throws SQLException {
    Calendar utc = Calendar.getInstance(TimeZone.getTimeZone("UTC"));
    long n = 0;
    try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery("SELECT * FROM " + table)) {
      columns(rs.getMetaData(), "id", "amount", "kind", "ts");
      while (rs.next()) {
        Timestamp ts = rs.getTimestamp(4, utc);
        String micros = "null";
        if (ts != null) {
          Instant i = ts.toInstant();
          micros = Long.toString(i.getEpochSecond() * 1_000_000L + i.getNano() / 1_000);
        }
        System.out.println("row\t" + rs.getLong(1) + "\t" + rs.getDouble(2) + "\t" + rs.getString(3) + "\t" + micros);
        n++;
      }
    }
    return n;
  }

  static long aggregate(Connection conn, String table) throws SQLException {
    long total = 0;
    String sql = "SELECT kind, count(*) AS n, sum(amount) AS total FROM " + table + " GROUP BY kind ORDER BY kind";
    try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      columns(rs.getMetaData(), "kind", "n", "total");
      while (rs.next()) {
        System.out.println("agg\t" + rs.getString(1) + "\t" + rs.getLong(2) + "\t" + rs.getDouble(3));
        total += rs.getLong(2);
      }
    }
    return total;
  }

  // A prepared statement with bound parameters (DoPutPreparedStatementQuery).
  static void params(Connection conn, String table) throws SQLException {
    String sql = "SELECT count(*) AS n FROM " + table + " WHERE id > ? AND kind = ?";
    try (PreparedStatement ps = conn.prepareStatement(sql)) {
      ps.setLong(1, 10);
      ps.setString(2, "buy");
      try (ResultSet rs = ps.executeQuery()) {
        check(rs.next(), "count(*) with parameters returned no row");
        System.out.println("param\t" + rs.getLong(1));
      }
    }
  }

  static void columns(ResultSetMetaData md, String... names) throws SQLException {
    check(md.getColumnCount() == names.length, "got " + md.getColumnCount() + " columns, want " + names.length);
    for (int i = 0; i < names.length; i++) {
      check(names[i].equalsIgnoreCase(md.getColumnName(i + 1)), "column " + (i + 1) + " is " + md.getColumnName(i + 1) + ", want " + names[i]);
    }
  }

  static void check(boolean ok, String what) {
    if (!ok) {
      throw new AssertionError(what);
    }
  }
}
