package node

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// The privilege matrix (docs/security.md, "Authorization"): every Flight
// and Flight SQL call and every kind of SQL statement, made by each kind
// of caller, is allowed or refused exactly as a small model says.
//
// The callers: none (no credentials), a wrong password, an expired token,
// alice (no privileges), bob (granted exactly what the operation needs,
// just before it), carol (who created t and v, and holds CREATE on the
// database), admin (a superuser), and API keys of bob: one valid (as
// bob), one expired, one dropped. The model: no credentials, the wrong
// password, the expired token and the expired and dropped keys are
// Unauthenticated; admin may do everything; carol what needs no more than
// her objects and CREATE; bob whatever privileges can grant (not GRANT,
// which takes ownership, nor role management, which takes a superuser);
// alice nothing. Listings succeed for every user and show t exactly to
// those who hold some privilege on it.

// need is a privilege an operation needs: on "t", "v", "fresh" (a table
// carol creates for the operation), "sys" (lakestream.tiering) or "db"
// (CREATE on the default database).
type need struct {
	priv, obj string
}

type authzOp struct {
	name string
	// needs are the privileges that allow it; grant marks GRANT (owner
	// or superuser), admin role management (superuser).
	needs        []need
	grant, admin bool
	// listing: run returns whether t was listed, and never fails for a
	// user.
	listing bool
	run     func(ctx context.Context, m *matrix, fresh string) (listed bool, err error)
}

type matrix struct {
	t     *testing.T
	cl    *flightsql.Client
	admin context.Context // logged in as admin, for set-up inside an op
	seq   int
}

func (m *matrix) next() int { m.seq++; return m.seq }

// exec runs a statement as ADBC's execute does: GetFlightInfo, a unary
// call, whose refusal always comes back as its status. (A DoPut refused
// before the client's first message at times reaches arrow-go's
// ExecuteUpdate as io.EOF from its Send, without the status: see the
// "DoPut update" op.)
func (m *matrix) exec(ctx context.Context, sql string) error {
	_, err := m.cl.Execute(ctx, sql)
	return err
}

// fetch runs sql as a query and reads every endpoint.
func (m *matrix) fetch(ctx context.Context, sql string) error {
	info, err := m.cl.Execute(ctx, sql)
	if err != nil {
		return err
	}
	return m.readAll(ctx, info)
}

func (m *matrix) readAll(ctx context.Context, info *flight.FlightInfo) error {
	for _, ep := range info.Endpoint {
		rdr, err := m.cl.DoGet(ctx, ep.Ticket)
		if err != nil {
			return err
		}
		for rdr.Next() {
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// column reads the string column col of a result.
func (m *matrix) column(ctx context.Context, info *flight.FlightInfo, err error, col string) ([]string, error) {
	if err != nil {
		return nil, err
	}
	var out []string
	for _, ep := range info.Endpoint {
		rdr, err := m.cl.DoGet(ctx, ep.Ticket)
		if err != nil {
			return nil, err
		}
		for rdr.Next() {
			rec := rdr.RecordBatch()
			idx := rec.Schema().FieldIndices(col)
			c := rec.Column(idx[0]).(*array.String)
			for i := range c.Len() {
				out = append(out, c.Value(i))
			}
		}
		err = rdr.Err()
		rdr.Release()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func rowsRecord(id int64) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).Append(id)
	b.Field(1).(*array.Int64Builder).Append(1)
	return b.NewRecordBatch()
}

func (m *matrix) ingest(ctx context.Context, table string, ifNotExist flightsql.TableDefinitionOptionsTableNotExistOption) error {
	rec := rowsRecord(int64(1000 + m.next()))
	defer rec.Release()
	rdr, _ := array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec})
	defer rdr.Release()
	_, err := m.cl.ExecuteIngest(ctx, rdr, &flightsql.ExecuteIngestOpts{Table: table, TableDefinitionOptions: &flightsql.TableDefinitionOptions{
		IfNotExist: ifNotExist, IfExists: flightsql.TableDefinitionOptionsTableExistsOptionAppend}})
	return err
}

// doPutPath is a plain Flight DoPut of one row to the table of path.
func (m *matrix) doPutPath(ctx context.Context, table string) error {
	stream, err := m.cl.Client.DoPut(ctx)
	if err != nil {
		return err
	}
	rec := rowsRecord(int64(1000 + m.next()))
	defer rec.Release()
	w := flight.NewRecordWriter(stream, ipc.WithSchema(rec.Schema()))
	w.SetFlightDescriptor(&flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{table}})
	if err := w.Write(rec); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	_ = w.Close()
	_ = stream.CloseSend()
	for {
		if _, err := stream.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

func authzOps() []authzOp {
	sel := []need{{"SELECT", "t"}}
	q := func(sql string) func(context.Context, *matrix, string) (bool, error) {
		return func(ctx context.Context, m *matrix, _ string) (bool, error) { return false, m.fetch(ctx, sql) }
	}
	u := func(sql string) func(context.Context, *matrix, string) (bool, error) {
		return func(ctx context.Context, m *matrix, fresh string) (bool, error) {
			return false, m.exec(ctx, strings.ReplaceAll(strings.ReplaceAll(sql, "$N", fmt.Sprint(m.next())), "$F", fresh))
		}
	}
	return []authzOp{
		{name: "query", needs: sel, run: q("SELECT count(*) FROM t")},
		{name: "plain scan", needs: sel, run: q("SELECT * FROM t")},
		{name: "key lookup", needs: sel, run: q("SELECT v FROM t WHERE id = 1")},
		{name: "CTE", needs: sel, run: q("WITH x AS (SELECT * FROM t) SELECT count(*) FROM x")},
		{name: "changelog", needs: sel, run: q(`SELECT count(*) FROM "t$changelog"`)},
		{name: "binlog", needs: sel, run: q(`SELECT count(*) FROM "t$binlog"`)},
		{name: "view", needs: []need{{"SELECT", "v"}, {"SELECT", "t"}}, run: q("SELECT count(*) FROM v")},
		{name: "system table", needs: []need{{"SELECT", "sys"}}, run: q("SELECT count(*) FROM lakestream.tiering")},
		{name: "subscription", needs: sel, run: func(ctx context.Context, m *matrix, _ string) (bool, error) {
			_, err := m.cl.Execute(ctx, "SELECT * FROM changes('t', 'earliest')")
			return false, err
		}},
		{name: "DESCRIBE", needs: sel, run: q("DESCRIBE t")},
		{name: "SHOW CREATE TABLE", needs: sel, run: q("SHOW CREATE TABLE t")},
		{name: "GetSchema", needs: sel, run: func(ctx context.Context, m *matrix, _ string) (bool, error) {
			_, err := m.cl.GetExecuteSchema(ctx, "SELECT count(*) FROM t")
			return false, err
		}},
		{name: "GetPrimaryKeys", needs: sel, run: func(ctx context.Context, m *matrix, _ string) (bool, error) {
			info, err := m.cl.GetPrimaryKeys(ctx, flightsql.TableRef{Table: "t"})
			if err != nil {
				return false, err
			}
			return false, m.readAll(ctx, info)
		}},
		{name: "prepared query", needs: sel, run: func(ctx context.Context, m *matrix, _ string) (bool, error) {
			ps, err := m.cl.Prepare(ctx, "SELECT count(*) FROM t")
			if err != nil {
				return false, err
			}
			defer ps.Close(ctx)
			info, err := ps.Execute(ctx)
			if err != nil {
				return false, err
			}
			return false, m.readAll(ctx, info)
		}},
		{name: "INSERT", needs: []need{{"INSERT", "t"}}, run: u("INSERT INTO t VALUES ($N + 100, 1)")},
		{name: "DoPut update", needs: []need{{"INSERT", "t"}}, run: func(ctx context.Context, m *matrix, _ string) (bool, error) {
			_, err := m.cl.ExecuteUpdate(ctx, fmt.Sprintf("INSERT INTO t VALUES (%d, 1)", 50000+m.next()))
			return false, err
		}},
		{name: "INSERT ... SELECT", needs: []need{{"INSERT", "t"}, {"SELECT", "t"}}, run: u("INSERT INTO t SELECT id + 10000 + $N * 100, v FROM t WHERE id = 1")},
		{name: "UPDATE", needs: []need{{"UPDATE", "t"}, {"SELECT", "t"}}, run: u("UPDATE t SET v = 2 WHERE id = 1")},
		{name: "DELETE", needs: []need{{"DELETE", "t"}, {"SELECT", "t"}}, run: u("DELETE FROM t WHERE id = 99999")},
		{name: "ingest", needs: []need{{"INSERT", "t"}}, run: func(ctx context.Context, m *matrix, _ string) (bool, error) {
			return false, m.ingest(ctx, "t", flightsql.TableDefinitionOptionsTableNotExistOptionFail)
		}},
		{name: "ingest creating", needs: []need{{"CREATE", "db"}}, run: func(ctx context.Context, m *matrix, _ string) (bool, error) {
			return false, m.ingest(ctx, fmt.Sprintf("ing%d", m.next()), flightsql.TableDefinitionOptionsTableNotExistOptionCreate)
		}},
		{name: "DoPut path", needs: []need{{"INSERT", "t"}}, run: func(ctx context.Context, m *matrix, _ string) (bool, error) {
			return false, m.doPutPath(ctx, "t")
		}},
		{name: "CREATE TABLE", needs: []need{{"CREATE", "db"}}, run: u("CREATE TABLE c$N (a BIGINT)")},
		{name: "CREATE TABLE AS", needs: []need{{"CREATE", "db"}, {"SELECT", "t"}}, run: u("CREATE TABLE ca$N AS SELECT * FROM t")},
		{name: "CREATE VIEW", needs: []need{{"CREATE", "db"}, {"SELECT", "t"}}, run: u("CREATE VIEW cv$N AS SELECT * FROM t")},
		{name: "ALTER TABLE", needs: []need{{"ALTER", "t"}}, run: u("ALTER TABLE t ADD COLUMN a$N BIGINT")},
		{name: "DROP TABLE", needs: []need{{"DROP", "fresh"}}, run: u("DROP TABLE $F")},
		{name: "GRANT", grant: true, run: u("GRANT SELECT ON TABLE t TO alice")},
		{name: "CREATE ROLE", admin: true, run: u("CREATE ROLE r$N")},
		{name: "CREATE USER", admin: true, run: u("CREATE USER u$N WITH PASSWORD 'password-$N'")},
		{name: "SHOW GRANTS", run: q("SHOW GRANTS")},
		{name: "CREATE API KEY", run: func(ctx context.Context, m *matrix, _ string) (bool, error) {
			return false, m.fetch(ctx, fmt.Sprintf("CREATE API KEY ak%d", m.next()))
		}},
		{name: "CREATE API KEY for another user", admin: true, run: func(ctx context.Context, m *matrix, _ string) (bool, error) {
			return false, m.fetch(ctx, fmt.Sprintf("CREATE API KEY ak%d FOR USER admin", m.next()))
		}},
		{name: "DROP API KEY", run: func(ctx context.Context, m *matrix, _ string) (bool, error) {
			name := fmt.Sprintf("dk%d", m.next())
			if err := m.fetch(ctx, "CREATE API KEY "+name); err != nil {
				return false, err
			}
			return false, m.exec(ctx, "DROP API KEY "+name)
		}},
		{name: "DROP API KEY of another user", admin: true, run: func(ctx context.Context, m *matrix, _ string) (bool, error) {
			name := fmt.Sprintf("dk%d", m.next())
			if err := m.fetch(m.admin, "CREATE API KEY "+name+" FOR USER admin"); err != nil {
				m.t.Fatal(err)
			}
			return false, m.exec(ctx, "DROP API KEY "+name)
		}},
		{name: "SHOW API KEYS", run: q("SHOW API KEYS")},
		{name: "GetSqlInfo", run: func(ctx context.Context, m *matrix, _ string) (bool, error) {
			info, err := m.cl.GetSqlInfo(ctx, []flightsql.SqlInfo{flightsql.SqlInfoFlightSqlServerName})
			if err != nil {
				return false, err
			}
			return false, m.readAll(ctx, info)
		}},
		{name: "GetCatalogs", run: func(ctx context.Context, m *matrix, _ string) (bool, error) {
			info, err := m.cl.GetCatalogs(ctx)
			if err != nil {
				return false, err
			}
			return false, m.readAll(ctx, info)
		}},
		{name: "GetTableTypes", run: func(ctx context.Context, m *matrix, _ string) (bool, error) {
			info, err := m.cl.GetTableTypes(ctx)
			if err != nil {
				return false, err
			}
			return false, m.readAll(ctx, info)
		}},
		{name: "Handshake", run: func(ctx context.Context, m *matrix, _ string) (bool, error) {
			hs, err := m.cl.Client.Handshake(ctx)
			if err != nil {
				return false, err
			}
			if err := hs.CloseSend(); err != nil {
				return false, err
			}
			for {
				if _, err := hs.Recv(); err != nil {
					if errors.Is(err, io.EOF) {
						return false, nil
					}
					return false, err
				}
			}
		}},
		{name: "GetTables", listing: true, needs: sel, run: func(ctx context.Context, m *matrix, _ string) (bool, error) {
			info, err := m.cl.GetTables(ctx, &flightsql.GetTablesOpts{})
			names, err := m.column(ctx, info, err, "table_name")
			return slices.Contains(names, "t"), err
		}},
		{name: "GetDbSchemas", listing: true, needs: sel, run: func(ctx context.Context, m *matrix, _ string) (bool, error) {
			info, err := m.cl.GetDBSchemas(ctx, &flightsql.GetDBSchemasOpts{})
			names, err := m.column(ctx, info, err, "db_schema_name")
			return slices.Contains(names, "default"), err
		}},
		{name: "SHOW TABLES", listing: true, needs: sel, run: func(ctx context.Context, m *matrix, _ string) (bool, error) {
			info, err := m.cl.Execute(ctx, "SHOW TABLES")
			names, err := m.column(ctx, info, err, "name")
			return slices.Contains(names, "t"), err
		}},
		{name: "SHOW DATABASES", listing: true, needs: sel, run: func(ctx context.Context, m *matrix, _ string) (bool, error) {
			info, err := m.cl.Execute(ctx, "SHOW DATABASES")
			names, err := m.column(ctx, info, err, "database_name")
			return slices.Contains(names, "default"), err
		}},
		{name: "ListFlights", listing: true, needs: sel, run: func(ctx context.Context, m *matrix, _ string) (bool, error) {
			stream, err := m.cl.Client.ListFlights(ctx, &flight.Criteria{})
			if err != nil {
				return false, err
			}
			listed := false
			for {
				fi, err := stream.Recv()
				if errors.Is(err, io.EOF) {
					return listed, nil
				}
				if err != nil {
					return false, err
				}
				listed = listed || slices.Equal(fi.FlightDescriptor.Path, []string{"default", "t"})
			}
		}},
	}
}

func TestPrivilegeMatrix(t *testing.T) {
	clock := &testClock{t: time.Now()}
	cfg := secureConfig(t, SecurityConfig{Auth: AuthOn, AdminPassword: "admin-password", now: clock.now, loginBurst: 1 << 20})
	n, cancel, done := startNodeWith(t, cfg)
	defer func() { cancel(); <-done }()
	cl := client(t, n.Addr())
	m := &matrix{t: t, cl: cl}
	admin := login(t, cl, "admin", "admin-password")
	for _, sql := range []string{
		"CREATE USER alice WITH PASSWORD 'alice-password'",
		"CREATE USER bob WITH PASSWORD 'bob-password'",
		"CREATE USER carol WITH PASSWORD 'carol-password'",
		"GRANT CREATE ON DATABASE default TO carol",
	} {
		if err := m.exec(admin, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	expired := login(t, cl, "alice", "alice-password")
	m.admin = admin
	bobKey := m.apiKey("CREATE API KEY bobs FOR USER bob")
	expiredKey := m.apiKey("CREATE API KEY soon FOR USER bob VALID UNTIL '" + clock.now().Add(time.Hour).UTC().Format(time.RFC3339) + "'")
	revokedKey := m.apiKey("CREATE API KEY gone FOR USER bob")
	if err := m.exec(admin, "DROP API KEY gone"); err != nil {
		t.Fatal(err)
	}
	clock.add(9 * time.Hour)
	admin = login(t, cl, "admin", "admin-password")
	m.admin = admin
	carol := login(t, cl, "carol", "carol-password")
	for _, sql := range []string{
		"CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT)",
		"INSERT INTO t VALUES (1, 1), (2, 2)",
		"CREATE VIEW v AS SELECT id, v FROM t",
	} {
		if err := m.exec(carol, sql); err != nil {
			t.Fatalf("carol: %s: %v", sql, err)
		}
	}
	wrong := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("alice:wrong-password")))
	callers := []struct {
		name string
		ctx  context.Context
	}{
		{"none", context.Background()},
		{"wrong password", wrong},
		{"expired token", expired},
		{"without", login(t, cl, "alice", "alice-password")},
		{"with", login(t, cl, "bob", "bob-password")},
		{"owner", carol},
		{"admin", admin},
		{"API key", bearer(bobKey)},
		{"expired API key", bearer(expiredKey)},
		{"revoked API key", bearer(revokedKey)},
	}
	target := map[string]string{"t": "TABLE t", "v": "TABLE v", "sys": "TABLE lakestream.tiering", "db": "DATABASE default"}
	for _, op := range authzOps() {
		for _, c := range callers {
			fresh := ""
			if slices.Contains(op.needs, need{"DROP", "fresh"}) {
				fresh = fmt.Sprintf("f%d", m.next())
				if err := m.exec(carol, "CREATE TABLE "+fresh+" (a BIGINT)"); err != nil {
					t.Fatal(err)
				}
				target["fresh"] = "TABLE " + fresh
			}
			if c.name == "with" || c.name == "API key" {
				for _, nd := range op.needs {
					if err := m.exec(admin, fmt.Sprintf("GRANT %s ON %s TO bob", nd.priv, target[nd.obj])); err != nil {
						t.Fatalf("grant %v: %v", nd, err)
					}
				}
			}
			listed, err := op.run(c.ctx, m, fresh)
			want, wantListed := authzModel(op, c.name)
			if errors.Is(err, io.EOF) && op.name == "DoPut update" && want != codes.OK {
				err = nil // refused; the client lost the status (see exec)
				want = codes.OK
			}
			if got := status.Code(err); got != want {
				t.Errorf("%s by %s: %v, the model says %s", op.name, c.name, err, want)
			}
			if op.listing && want == codes.OK && listed != wantListed {
				t.Errorf("%s by %s: t listed %v, the model says %v", op.name, c.name, listed, wantListed)
			}
			for _, sql := range []string{"REVOKE ALL ON TABLE t FROM alice, bob", "REVOKE ALL ON TABLE v FROM bob",
				"REVOKE ALL ON TABLE lakestream.tiering FROM bob", "REVOKE ALL ON DATABASE default FROM bob"} {
				if err := m.exec(admin, sql); err != nil {
					t.Fatalf("%s: %v", sql, err)
				}
			}
		}
	}
}

// apiKey runs CREATE API KEY as admin and returns the key.
func (m *matrix) apiKey(sql string) string {
	m.t.Helper()
	info, err := m.cl.Execute(m.admin, sql)
	keys, err := m.column(m.admin, info, err, "key")
	if err != nil || len(keys) != 1 {
		m.t.Fatalf("%s: %q, %v", sql, keys, err)
	}
	return keys[0]
}

func bearer(key string) context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+key)
}

// authzModel is the expected code of op by caller, and, for a listing,
// whether t shows.
func authzModel(op authzOp, caller string) (codes.Code, bool) {
	switch caller {
	case "none", "wrong password", "expired token", "expired API key", "revoked API key":
		return codes.Unauthenticated, false
	case "admin":
		return codes.OK, true
	case "API key": // bob's: as bob
		caller = "with"
	}
	if op.listing {
		return codes.OK, caller != "without"
	}
	allowed := false
	switch {
	case op.admin:
	case op.grant:
		allowed = caller == "owner"
	case caller == "with":
		allowed = true
	case caller == "owner":
		allowed = !slices.ContainsFunc(op.needs, func(n need) bool { return n.obj == "sys" })
	case caller == "without":
		allowed = len(op.needs) == 0
	}
	if allowed {
		return codes.OK, false
	}
	return codes.PermissionDenied, false
}

// Tickets: one forged (its JSON altered), one used by another user, and
// one used after the privilege it was planned under was revoked are
// refused; a prepared statement is its preparer's only; a subscription
// open when its privilege is revoked ends at its next batch.
func TestTicketsBoundAndRechecked(t *testing.T) {
	cfg := secureConfig(t, SecurityConfig{Auth: AuthOn, AdminPassword: "admin-password"})
	n, cancel, done := startNodeWith(t, cfg)
	defer func() { cancel(); <-done }()
	cl := client(t, n.Addr())
	m := &matrix{t: t, cl: cl}
	admin := login(t, cl, "admin", "admin-password")
	for _, sql := range []string{
		"CREATE USER alice WITH PASSWORD 'alice-password'",
		"CREATE USER bob WITH PASSWORD 'bob-password'",
		"CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT)",
		"INSERT INTO t VALUES (1, 1), (2, 2)",
		"GRANT SELECT ON TABLE t TO bob, alice",
	} {
		if err := m.exec(admin, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	alice, bob := login(t, cl, "alice", "alice-password"), login(t, cl, "bob", "bob-password")
	info, err := cl.Execute(bob, "SELECT * FROM t")
	if err != nil {
		t.Fatal(err)
	}
	tk := info.Endpoint[0].Ticket
	if err := m.readAll(bob, info); err != nil {
		t.Fatalf("bob reads his ticket: %v", err)
	}
	if err := m.readAll(alice, info); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("alice reads bob's ticket: %v, want PermissionDenied", err)
	}
	forged := &flight.FlightInfo{Endpoint: []*flight.FlightEndpoint{{Ticket: &flight.Ticket{
		Ticket: []byte(strings.Replace(string(tk.Ticket), `"kind":"scan"`, `"kind":"scan","snapshot":1`, 1))}}}}
	if err := m.readAll(bob, forged); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("a forged ticket: %v, want PermissionDenied", err)
	}
	ps, err := cl.Prepare(bob, "SELECT count(*) FROM t")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ps.Execute(alice); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("alice executes bob's prepared statement: %v, want PermissionDenied", err)
	}
	subCtx, stopSub := context.WithTimeout(bob, time.Minute)
	defer stopSub()
	sub, err := cl.Execute(subCtx, "SELECT id FROM changes('t', 'earliest')")
	if err != nil {
		t.Fatal(err)
	}
	subRdr, err := cl.DoGet(subCtx, sub.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	defer subRdr.Release()
	for seen := int64(0); seen < 2; {
		if !subRdr.Next() {
			t.Fatalf("subscription ended before the rows there were: %v", subRdr.Err())
		}
		seen += subRdr.RecordBatch().NumRows()
	}
	if err := m.exec(admin, "REVOKE SELECT ON TABLE t FROM bob"); err != nil {
		t.Fatal(err)
	}
	if err := m.exec(admin, "INSERT INTO t VALUES (3, 3)"); err != nil {
		t.Fatal(err)
	}
	for subRdr.Next() {
	}
	if status.Code(subRdr.Err()) != codes.PermissionDenied {
		t.Fatalf("the subscription after REVOKE: %v, want PermissionDenied", subRdr.Err())
	}
	if err := m.readAll(bob, info); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("bob's ticket after REVOKE: %v, want PermissionDenied", err)
	}
	if _, err := ps.Execute(bob); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("bob's prepared statement after REVOKE: %v, want PermissionDenied", err)
	}
}
