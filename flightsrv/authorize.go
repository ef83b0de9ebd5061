package flightsrv

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/lakestream/lakestream/auth"
	"github.com/lakestream/lakestream/catalog"
	"github.com/lakestream/lakestream/tables"
)

// Privileges (docs/security.md, "Authorization"). Every path that reads
// or writes a table gets it through table (or resolveScan, for a layer),
// which asks auth.Authorize, the one check, for the privilege the path
// needs; the query engine's resolver asks it for every table and view a
// query reads (node.Resolver). DDL asks it here (authorizeDDL), and
// listings show only what the caller may see (visible).

// table returns db.name for a call that needs priv on it.
func (s *Server) table(ctx context.Context, priv catalog.Privilege, db, name string) (*tables.Table, error) {
	if err := s.authorize(ctx, priv, db, name); err != nil {
		return nil, err
	}
	return s.store.Get(ctx, db, name)
}

func (s *Server) authorize(ctx context.Context, priv catalog.Privilege, db, name string) error {
	return auth.Authorize(ctx, s.store.Catalog(), priv, db, name)
}

// visible reports whether the caller may see an object in a listing.
func (s *Server) visible(ctx context.Context, o catalog.Object) bool {
	return auth.Visible(ctx, s.store.Catalog(), o)
}

// visibleName is visible for db.name.
func (s *Server) visibleName(ctx context.Context, db, name string) bool {
	o, ok := auth.Resolve(ctx, s.store.Catalog(), db, name)
	return ok && s.visible(ctx, o)
}

// applyDDL applies a DDL statement as the caller: roles and privileges
// (auth.ExecGrants), users (auth.Service.Exec), and the rest once the
// caller may (authorizeDDL); the creator of a table or view becomes its
// owner.
func (s *Server) applyDDL(ctx context.Context, stmt catalog.Statement) (int64, error) {
	cat := s.store.Catalog()
	if ok, err := auth.ExecGrants(ctx, cat, stmt); ok {
		return 0, err
	}
	if err := s.authorizeDDL(ctx, stmt); err != nil {
		return 0, err
	}
	created := s.creates(ctx, stmt)
	n, ok, err := s.execCatalogDDL(ctx, stmt) // ddl.go
	if !ok {
		err = s.store.Exec(ctx, stmt)
	}
	if drop, ok := stmt.(*catalog.DropDatabase); ok && err == nil {
		return n, cat.ForgetDatabase(context.WithoutCancel(ctx), drop.Name)
	}
	if err != nil || created == nil {
		return n, err
	}
	return n, s.recordOwner(ctx, *created)
}

// authorizeDDL checks the caller may apply stmt: CREATE needs CREATE on
// the database, ALTER and DROP the privilege on the object (an owner holds
// them), databases a superuser.
func (s *Server) authorizeDDL(ctx context.Context, stmt catalog.Statement) error {
	cat := s.store.Catalog()
	id, ok := auth.FromContext(ctx)
	if !ok {
		return fmt.Errorf("%w: no identity", auth.ErrUnauthenticated)
	}
	if id.Superuser {
		return nil
	}
	switch st := stmt.(type) {
	case *catalog.CreateDatabase, *catalog.DropDatabase:
		return fmt.Errorf("%w to create or drop a database: only a superuser (admin) may", auth.ErrPermissionDenied)
	case *catalog.CreateTable:
		return auth.AuthorizeObject(ctx, cat, catalog.PrivCreate, catalog.DatabaseObject(st.Table.DB))
	case *catalog.CreateView:
		if st.OrReplace {
			if v, err := cat.View(ctx, st.View.DB, st.View.Name); err == nil {
				return auth.AuthorizeObject(ctx, cat, catalog.PrivAlter, catalog.ViewObject(v))
			}
		}
		return auth.AuthorizeObject(ctx, cat, catalog.PrivCreate, catalog.DatabaseObject(st.View.DB))
	case *catalog.DropTable:
		return s.authorize(ctx, catalog.PrivDrop, st.Table.DB, st.Table.Name)
	case *catalog.DropView:
		return s.authorize(ctx, catalog.PrivDrop, st.View.DB, st.View.Name)
	case *catalog.AddColumn:
		return s.authorize(ctx, catalog.PrivAlter, st.Table.DB, st.Table.Name)
	}
	return nil // user DDL: auth.Service.Exec checks it
}

// creates returns the table or view stmt will create, if it does not
// exist yet: its creator becomes its owner.
func (s *Server) creates(ctx context.Context, stmt catalog.Statement) *catalog.TableName {
	cat := s.store.Catalog()
	var n catalog.TableName
	switch st := stmt.(type) {
	case *catalog.CreateTable:
		n = st.Table
	case *catalog.CreateView:
		n = st.View
	default:
		return nil
	}
	if _, ok := auth.Resolve(ctx, cat, n.DB, n.Name); ok {
		return nil
	}
	return &n
}

// recordOwner makes the caller the owner of the table or view just
// created. Without a user (a superuser with authentication off) there is
// no owner: superusers need none.
func (s *Server) recordOwner(ctx context.Context, n catalog.TableName) error {
	id, ok := auth.FromContext(ctx)
	if !ok || id.UserID == 0 {
		return nil
	}
	cat := s.store.Catalog()
	o, ok := auth.Resolve(ctx, cat, n.DB, n.Name)
	if !ok {
		return nil
	}
	return cat.SetOwner(context.WithoutCancel(ctx), o, id.UserID)
}

// showGrants answers SHOW GRANTS [FOR name].
func (s *Server) showGrants(ctx context.Context, name string) ([][]any, error) {
	return auth.ShowGrants(ctx, s.store.Catalog(), name)
}

// authorizeIngest checks a bulk ingest: INSERT into the table, CREATE on
// the database for one it creates, and DROP too for one it replaces.
func (s *Server) authorizeIngest(ctx context.Context, db, name string, create, replace bool) error {
	cat := s.store.Catalog()
	if create || replace {
		if err := auth.AuthorizeObject(ctx, cat, catalog.PrivCreate, catalog.DatabaseObject(db)); err != nil || create {
			return err
		}
		return s.authorize(ctx, catalog.PrivInsert|catalog.PrivDrop, db, name)
	}
	return s.authorize(ctx, catalog.PrivInsert, db, name)
}

// databaseVisible reports whether the caller may see database db in a
// listing: it holds a privilege on the database, or may see a table or
// view of it.
func (s *Server) databaseVisible(ctx context.Context, db string) bool {
	if s.visible(ctx, catalog.DatabaseObject(db)) {
		return true
	}
	cat := s.store.Catalog()
	ts, _ := cat.Tables(ctx, db)
	for _, t := range ts {
		if s.visible(ctx, catalog.TableObject(t)) {
			return true
		}
	}
	vs, _ := cat.Views(ctx, db)
	for _, v := range vs {
		if s.visible(ctx, catalog.ViewObject(v)) {
			return true
		}
	}
	return false
}

// preparedOf returns the prepared statement of handle if the caller
// prepared it: a handle is bound to its user.
func (s *Server) preparedOf(ctx context.Context, handle string) (*prepared, error) {
	p, err := s.prepared.get(handle)
	if err != nil {
		return nil, err
	}
	if p.user != callerID(ctx) {
		return nil, fmt.Errorf("%w: prepared statement %q was prepared by another user", auth.ErrPermissionDenied, handle)
	}
	return p, nil
}

// callerID is the user ID of the caller, 0 for none (auth.Anonymous).
func callerID(ctx context.Context) int64 {
	id, _ := auth.FromContext(ctx)
	return id.UserID
}

// errForgedTicket is the error of a ticket whose MAC does not verify.
var errForgedTicket = fmt.Errorf("%w: the ticket was not issued by this node, or was altered", auth.ErrPermissionDenied)

// ticketKeyOf is the key that signs tickets: the one given (a cluster's),
// else the authentication service's, else a random one, good for this
// process.
func ticketKeyOf(a *auth.Service, given []byte) []byte {
	if len(given) > 0 {
		return given
	}
	if a != nil {
		return a.TicketKey()
	}
	key := make([]byte, 32)
	rand.Read(key)
	return key
}

// seal signs tk for the caller, valid for Options.TicketTTL.
func (s *Server) seal(ctx context.Context, tk *ticket) ([]byte, error) {
	tk.User = callerID(ctx)
	tk.Exp = time.Now().Add(s.opts.TicketTTL).Unix()
	raw, err := tk.encode(s.ticketKey)
	if err == nil && len(raw) > maxTicketBytes {
		return nil, fmt.Errorf("%w: the plan needs a ticket of %d bytes, over the %d-byte limit (bound parameters too large?)", errInvalid, len(raw), maxTicketBytes)
	}
	return raw, err
}

// endpoint is the endpoint of tk, sealed for the caller, with its expiry.
func (s *Server) endpoint(ctx context.Context, tk *ticket) (*flight.FlightEndpoint, error) {
	raw, err := s.seal(ctx, tk)
	if err != nil {
		return nil, err
	}
	return &flight.FlightEndpoint{Ticket: &flight.Ticket{Ticket: raw}, ExpirationTime: timestamppb.New(time.Unix(tk.Exp, 0))}, nil
}

// authorizeTicket checks, at DoGet, that a ticket was planned by the
// caller, and, for a scan and a subscription, that the caller still holds
// SELECT on its table: a REVOKE between planning and DoGet refuses it. The
// other kinds are checked again on their way: a query's tables as the
// engine binds them, a lookup's table as it is planned again, SHOW's as
// its rows are made.
func (s *Server) authorizeTicket(ctx context.Context, tk *ticket) error {
	if tk.User != callerID(ctx) {
		return fmt.Errorf("%w: the ticket was issued to another user", auth.ErrPermissionDenied)
	}
	if tk.Kind != "scan" && tk.Kind != "changes" {
		return nil
	}
	t, err := s.store.ByID(ctx, tk.Table)
	if err != nil {
		return err
	}
	def := t.Def()
	return auth.AuthorizeObject(ctx, s.store.Catalog(), catalog.PrivSelect, catalog.TableObject(def))
}

// authorizeFollow checks a subscription's SELECT again before each batch
// it sends (about a microsecond, docs/benchmarks.md): a REVOKE ends a
// stream already open.
func (s *Server) authorizeFollow(ctx context.Context, t *tables.Table) error {
	return auth.AuthorizeObject(ctx, s.store.Catalog(), catalog.PrivSelect, catalog.TableObject(t.Def()))
}

// internalPrefix begins the names of the node-to-node services served on
// the same gRPC server (package cluster's replication, and any other
// lakestream.* service): they read and write buckets' logs directly,
// beneath every table privilege. The Flight services are arrow.flight.*.
const internalPrefix = "/lakestream."

func isInternal(method string) bool { return strings.HasPrefix(method, internalPrefix) }

// authorizeMethod keeps the node-to-node methods from clients: with
// Options.Nodes only nodes reach them (authenticateNode), by certificate;
// without (a cluster without node-to-node TLS, whose authentication is
// off) only a superuser may. A user with credentials calling the
// replication service's Fetch would read any table's log without SELECT.
func authorizeMethod(ctx context.Context, method string) error {
	if !isInternal(method) {
		return nil
	}
	if id, ok := auth.FromContext(ctx); ok && id.Superuser {
		return nil
	}
	return fmt.Errorf("%w: %s is a node-to-node service: only a superuser may call it", auth.ErrPermissionDenied, method)
}
