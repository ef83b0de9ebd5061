// JDBC client matrix: the Arrow Flight SQL JDBC driver against a Lakestream
// node, doing what JDBC users do first.
//
//   java -Duser.timezone=UTC --add-opens=java.base/java.nio=ALL-UNNAMED \
//        -cp flight-sql-jdbc-driver-<v>.jar:<classes> ClientMatrix <jdbc-url>
//
// It creates table jm with one column per basic type (c_bool BOOLEAN, ...,
// the columns of tests/interop/typed.py), inserts two rows with a prepared
// INSERT and addBatch (row 0 the low values, row 1 the high ones, as
// JDBC_VALUES in tests/interop/test_jdbc_matrix.py), then prints, as
// tab-separated lines the caller checks against DuckDB's answers:
//
//   inserted  <update counts>
//   where     <column> <ids whose column equals the high value, bound typed>
//   select    <column> <SELECT CAST(? AS type) with the high value, as getString>
//   query     <count(*)> <sum(id)>
//   col       <label> <type name> <precision> <scale> <signed> <nullable> <schema> <table> <read only> <searchable> <case sensitive>
//   typeinfo  <TYPE_NAME> <DATA_TYPE>           (one line per row of getTypeInfo)
//   nulltype  <the driver's error binding SELECT ? AS x, whose parameter type is unknown>
//   ok
import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.Date;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Time;
import java.sql.Timestamp;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.util.Arrays;

public class ClientMatrix {
  static final String[] NAMES = {
    "bool", "int8", "int16", "int32", "int64", "float", "double", "decimal",
    "varchar", "blob", "date", "time", "timestamp", "timestamptz"
  };
  static final String[] TYPES = {
    "BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL(9,2)",
    "VARCHAR", "BLOB", "DATE", "TIME", "TIMESTAMP", "TIMESTAMPTZ"
  };

  public static void main(String[] args) {
    try {
      run(args[0]);
    } catch (Throwable e) {
      e.printStackTrace();
      System.exit(1); // the driver leaves non-daemon threads after a failure
    }
    System.exit(0);
  }

  // set binds value i (0 low, 1 high) of column c with the typed setter a
  // JDBC user would call.
  static void set(PreparedStatement ps, int at, int c, int i) throws SQLException {
    boolean hi = i == 1;
    switch (NAMES[c]) {
      case "bool": ps.setBoolean(at, hi); break;
      case "int8": ps.setByte(at, (byte) (hi ? 9 : -5)); break;
      case "int16": ps.setShort(at, (short) (hi ? 300 : -300)); break;
      case "int32": ps.setInt(at, hi ? 70_000 : -70_000); break;
      case "int64": ps.setLong(at, hi ? 1L << 40 : 9L); break;
      case "float": ps.setFloat(at, hi ? 2.25f : -1.5f); break;
      case "double": ps.setDouble(at, hi ? 1e300 : 0.125); break;
      case "decimal": ps.setBigDecimal(at, new BigDecimal(hi ? "1234567.89" : "-1234567.89")); break;
      case "varchar": ps.setString(at, hi ? "löschen" : "abc"); break;
      case "blob": ps.setBytes(at, hi ? new byte[] {(byte) 0xff} : new byte[] {0, 1}); break;
      case "date": ps.setDate(at, Date.valueOf(hi ? LocalDate.of(2024, 2, 29) : LocalDate.of(1999, 12, 31))); break;
      case "time": ps.setTime(at, Time.valueOf(hi ? LocalTime.of(23, 59, 58) : LocalTime.of(0, 0, 1))); break;
      case "timestamp":
      case "timestamptz":
        ps.setTimestamp(at, Timestamp.valueOf(hi ? LocalDateTime.of(2024, 2, 29, 12, 30, 0, 5_000_000)
                                                  : LocalDateTime.of(1970, 1, 1, 0, 0, 0, 1_000_000)));
        break;
      default: throw new IllegalStateException(NAMES[c]);
    }
  }

  static void run(String url) throws SQLException {
    try (Connection conn = DriverManager.getConnection(url)) {
      StringBuilder cols = new StringBuilder("id BIGINT");
      for (int c = 0; c < NAMES.length; c++) cols.append(", c_").append(NAMES[c]).append(' ').append(TYPES[c]);
      try (Statement st = conn.createStatement()) {
        st.execute("CREATE TABLE jm (" + cols + ")");
      }
      insert(conn);
      where(conn);
      select(conn);
      query(conn);
      columns(conn);
      typeInfo(conn);
      nullType(conn);
      System.out.println("ok");
    }
  }

  static void insert(Connection conn) throws SQLException {
    String qs = String.join(", ", java.util.Collections.nCopies(NAMES.length + 1, "?"));
    try (PreparedStatement ps = conn.prepareStatement("INSERT INTO jm VALUES (" + qs + ")")) {
      for (int i = 0; i < 2; i++) {
        ps.setLong(1, i);
        for (int c = 0; c < NAMES.length; c++) set(ps, c + 2, c, i);
        ps.addBatch();
      }
      System.out.println("inserted\t" + Arrays.toString(ps.executeBatch()));
    }
  }

  static void where(Connection conn) throws SQLException {
    for (int c = 0; c < NAMES.length; c++) {
      try (PreparedStatement ps = conn.prepareStatement("SELECT id FROM jm WHERE c_" + NAMES[c] + " = ? ORDER BY id")) {
        set(ps, 1, c, 1);
        StringBuilder ids = new StringBuilder();
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) ids.append(ids.length() > 0 ? "," : "").append(rs.getLong(1));
        }
        System.out.println("where\t" + NAMES[c] + "\t" + ids);
      }
    }
  }

  static void select(Connection conn) throws SQLException {
    for (int c = 0; c < NAMES.length; c++) {
      try (PreparedStatement ps = conn.prepareStatement("SELECT CAST(? AS " + TYPES[c] + ") = c_" + NAMES[c] + " AS same FROM jm WHERE id = 1")) {
        set(ps, 1, c, 1);
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          System.out.println("select\t" + NAMES[c] + "\t" + rs.getString(1));
        }
      }
    }
  }

  static void query(Connection conn) throws SQLException {
    try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery("SELECT count(*), sum(id) FROM jm")) {
      rs.next();
      System.out.println("query\t" + rs.getLong(1) + "\t" + rs.getLong(2));
    }
  }

  static void columns(Connection conn) throws SQLException {
    try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery("SELECT * FROM jm")) {
      ResultSetMetaData md = rs.getMetaData();
      for (int i = 1; i <= md.getColumnCount(); i++) {
        System.out.println(String.join("\t", "col", md.getColumnLabel(i), md.getColumnTypeName(i),
            String.valueOf(md.getPrecision(i)), String.valueOf(md.getScale(i)), String.valueOf(md.isSigned(i)),
            String.valueOf(md.isNullable(i)), md.getSchemaName(i), md.getTableName(i),
            String.valueOf(md.isReadOnly(i)), String.valueOf(md.isSearchable(i)), String.valueOf(md.isCaseSensitive(i))));
      }
    }
  }

  static void typeInfo(Connection conn) throws SQLException {
    DatabaseMetaData dm = conn.getMetaData();
    try (ResultSet rs = dm.getTypeInfo()) {
      while (rs.next()) System.out.println("typeinfo\t" + rs.getString("TYPE_NAME") + "\t" + rs.getInt("DATA_TYPE"));
    }
  }

  static void nullType(Connection conn) throws SQLException {
    try (PreparedStatement ps = conn.prepareStatement("SELECT ? AS x")) {
      ps.setLong(1, 41);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        System.out.println("nulltype\tnone\t" + rs.getString(1));
      }
    } catch (SQLException | RuntimeException e) {
      System.out.println("nulltype\t" + e.getMessage().replace('\n', ' '));
    }
  }
}
