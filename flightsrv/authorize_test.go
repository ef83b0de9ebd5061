package flightsrv_test

import (
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/lakestream/lakestream/internal/flightlogin"
)

// The role and grant statements' mistakes are client errors with their
// own codes, never Internal.
func TestGrantStatementErrors(t *testing.T) {
	ts, cl, _ := startAuthServer(t)
	ts.mustExec("CREATE TABLE t (id BIGINT)")
	ctx, err := flightlogin.Login(testCtx(t), cl.Client, "admin", "admin-password")
	if err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{"CREATE ROLE a", "CREATE ROLE b", "GRANT a TO b", "CREATE USER alice WITH PASSWORD 'alice-password'"} {
		if _, err := cl.ExecuteUpdate(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	for _, tc := range []struct {
		sql   string
		code  codes.Code
		words []string
	}{
		{"CREATE ROLE a", codes.AlreadyExists, []string{`role "a" already exists`}},
		{"CREATE ROLE alice", codes.AlreadyExists, []string{"a user has that name"}},
		{"CREATE USER a WITH PASSWORD 'long-enough'", codes.AlreadyExists, []string{"a role has that name"}},
		{"DROP ROLE nope", codes.NotFound, []string{`role "nope" does not exist`}},
		{"GRANT nope TO alice", codes.NotFound, []string{`role "nope" does not exist`}},
		{"GRANT SELECT ON TABLE t TO nobody", codes.NotFound, []string{`role "nobody" does not exist`}},
		{"GRANT SELECT ON TABLE nothere TO alice", codes.NotFound, []string{"does not exist"}},
		{"GRANT SELECT ON DATABASE nodb TO alice", codes.NotFound, nil},
		{"GRANT b TO a", codes.InvalidArgument, []string{"cycle"}},
		{"GRANT a TO a", codes.InvalidArgument, []string{"cycle"}},
		{"GRANT CREATE ON TABLE t TO alice", codes.InvalidArgument, []string{"CREATE is a privilege on a database"}},
		{"SHOW GRANTS FOR nobody", codes.NotFound, nil},
	} {
		_, err := cl.ExecuteUpdate(ctx, tc.sql)
		if tc.sql[:4] == "SHOW" {
			_, err = cl.Execute(ctx, tc.sql)
		}
		t.Run(tc.sql, func(t *testing.T) { expectCode(t, err, tc.code, tc.words...) })
	}
}
