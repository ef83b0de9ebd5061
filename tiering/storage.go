package tiering

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	icebergio "github.com/apache/iceberg-go/io"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // registers the s3:// FileIO (and no other cloud's SDK)
	_ "github.com/jackc/pgx/v5/stdlib"             // database/sql driver "pgx"
	_ "modernc.org/sqlite"                         // database/sql driver "sqlite"
)

// StorageConfig says where the Iceberg catalog and the warehouse are.
type StorageConfig struct {
	// Catalog is the Iceberg catalog URI:
	//   - sqlite://<file> (also sqlite:///abs/file): iceberg-go's SQL catalog
	//     in a SQLite file, in WAL mode so that other processes (pyiceberg)
	//     can read it while we write. A relative path is relative to the
	//     working directory; the file and its directory are created.
	//   - postgres://user:pass@host:port/db?sslmode=disable (also
	//     postgresql://): the SQL catalog in PostgreSQL, through pgx.
	//   - http://… or https://…: an Iceberg REST catalog; a token or an
	//     OAuth credential goes in Properties ("token", "credential").
	// The SQL catalogs create their tables (iceberg_tables,
	// iceberg_namespace_properties) if they are missing. Required.
	Catalog string
	// Warehouse is where tables put their metadata and data files:
	// file:///abs/dir (created if missing) or s3://bucket/prefix. Required
	// with a SQL catalog; with a REST catalog it is optional and passed to
	// the server as it is (some servers want a warehouse name there).
	Warehouse string
	// S3 holds the object storage settings, used with an s3:// warehouse.
	S3 S3Config
	// Name is the catalog name, stored in every row of the SQL catalog's
	// tables (readers must use the same one). Default "lakestream".
	Name string
	// Properties are more iceberg-go catalog properties, passed as they
	// are and winning over those derived from the fields above: "token",
	// "credential", "scope", "oauth2-server-uri" or "prefix" for a REST
	// catalog, for instance. The values of secret ones (token, credential,
	// secret, password…) never appear in errors.
	Properties map[string]string
}

// S3Config holds the settings of an S3 or S3-compatible object store. Each
// empty field falls back to the AWS environment variable named with it.
type S3Config struct {
	// Endpoint is the store's URL, for S3-compatible stores such as MinIO
	// or moto (http://127.0.0.1:9000). Default AWS_ENDPOINT_URL_S3, else
	// AWS_ENDPOINT_URL, else AWS's own endpoint for the region.
	Endpoint string
	// Region is the bucket's region. Default AWS_REGION, else
	// AWS_DEFAULT_REGION; required unless an endpoint is set, when it
	// defaults to "us-east-1" (which S3-compatible stores accept).
	Region string
	// AccessKeyID and SecretAccessKey are static credentials, set both or
	// neither. Default AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (with
	// AWS_SESSION_TOKEN); without any, the AWS SDK's default chain (shared
	// config files, instance roles) is used.
	AccessKeyID     string
	SecretAccessKey string
	// SessionToken goes with temporary credentials. Default
	// AWS_SESSION_TOKEN, taken only when the key pair comes from the
	// environment too.
	SessionToken string
	// PathStyle addresses objects as endpoint/bucket/key, which MinIO and
	// moto need; false means virtual-hosted style (bucket.endpoint/key),
	// which AWS wants. Default false. It is passed explicitly, as
	// s3.force-virtual-addressing, rather than left to iceberg-go's guess
	// from whether an endpoint is set, so the setting means what it says.
	PathStyle bool
}

// DefaultCatalogName is StorageConfig.Name's default.
const DefaultCatalogName = "lakestream"

// sqliteBusyTimeoutMillis is how long a SQLite catalog connection waits
// for another writer's lock (another lakestream, or a pyiceberg writer)
// before failing with "database is locked".
const sqliteBusyTimeoutMillis = 10_000

// catalogKind is the kind of catalog a Catalog URI names.
type catalogKind int

const (
	kindSQLite catalogKind = iota + 1
	kindPostgres
	kindREST
)

// Validate reports every problem of the configuration at once, after the
// defaults and the AWS_* environment variables are applied. Messages name
// the field and never contain a secret.
func (c StorageConfig) Validate() error {
	return c.resolve(os.Getenv).validate()
}

// resolve returns c with its defaults and the environment (read through
// getenv) filled in.
func (c StorageConfig) resolve(getenv func(string) string) StorageConfig {
	if c.Name == "" {
		c.Name = DefaultCatalogName
	}
	// Schemes are case-insensitive, but pgx only knows lower-case ones.
	if scheme, rest, ok := strings.Cut(c.Catalog, "://"); ok {
		c.Catalog = strings.ToLower(scheme) + "://" + rest
	}
	s := &c.S3
	s.Endpoint = firstNonEmpty(s.Endpoint, getenv("AWS_ENDPOINT_URL_S3"), getenv("AWS_ENDPOINT_URL"))
	s.Region = firstNonEmpty(s.Region, getenv("AWS_REGION"), getenv("AWS_DEFAULT_REGION"))
	if s.Region == "" && s.Endpoint != "" {
		s.Region = "us-east-1"
	}
	if s.AccessKeyID == "" && s.SecretAccessKey == "" {
		s.AccessKeyID = getenv("AWS_ACCESS_KEY_ID")
		s.SecretAccessKey = getenv("AWS_SECRET_ACCESS_KEY")
		if s.SessionToken == "" {
			s.SessionToken = getenv("AWS_SESSION_TOKEN")
		}
	}
	return c
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// validate checks a resolved configuration.
func (c StorageConfig) validate() error {
	var errs []error
	kind, err := parseCatalogURI(c.Catalog)
	if err != nil {
		errs = append(errs, err)
	}
	wh, err := parseWarehouse(c.Warehouse, kind)
	if err != nil {
		errs = append(errs, err)
	}
	if wh != nil && wh.Scheme == "s3" {
		errs = append(errs, c.S3.validate()...)
	} else if c.S3.Endpoint != "" {
		// A REST catalog may hand out s3:// tables without an s3://
		// warehouse here; a malformed endpoint is wrong either way.
		if err := checkEndpoint(c.S3.Endpoint); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// parseCatalogURI checks a Catalog URI and tells which kind it names.
func parseCatalogURI(uri string) (catalogKind, error) {
	if uri == "" {
		return 0, errors.New("catalog: empty; want sqlite://<file>, postgres://user@host/db or http(s)://host (REST)")
	}
	scheme, rest, ok := strings.Cut(uri, "://")
	if !ok {
		return 0, fmt.Errorf("catalog %s: not a URI; want sqlite://<file>, postgres://user@host/db or http(s)://host (REST)", redactURI(uri))
	}
	switch scheme {
	case "sqlite":
		if rest == "" {
			return 0, errors.New("catalog sqlite://: no file path; want sqlite://<file> or sqlite:///abs/file")
		}
		if strings.ContainsAny(rest, "?#") {
			return 0, fmt.Errorf("catalog %s: a sqlite catalog takes a plain file path, without ? or #", redactURI(uri))
		}
		return kindSQLite, nil
	case "postgres", "postgresql":
		u, err := url.Parse(uri)
		if err != nil {
			return 0, fmt.Errorf("catalog %s: %v", redactURI(uri), urlErr(err))
		}
		if u.Host == "" && u.Query().Get("host") == "" {
			return 0, fmt.Errorf("catalog %s: no host", redactURI(uri))
		}
		return kindPostgres, nil
	case "http", "https":
		u, err := url.Parse(uri)
		if err != nil {
			return 0, fmt.Errorf("catalog %s: %v", redactURI(uri), urlErr(err))
		}
		if u.Host == "" {
			return 0, fmt.Errorf("catalog %s: no host", redactURI(uri))
		}
		return kindREST, nil
	default:
		return 0, fmt.Errorf("catalog %s: unsupported scheme %q; want sqlite, postgres, postgresql, http or https", redactURI(uri), scheme)
	}
}

// s3BucketName is the rule for bucket names (3 to 63 lower-case letters,
// digits, dots and hyphens, starting and ending with a letter or digit).
var s3BucketName = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

// parseWarehouse checks a Warehouse location; it returns nil and no error
// for a REST catalog's empty or plain-name warehouse, which only the server
// interprets.
func parseWarehouse(wh string, kind catalogKind) (*url.URL, error) {
	if wh == "" || (kind == kindREST && !strings.Contains(wh, "://")) {
		if kind == kindREST {
			return nil, nil
		}
		return nil, errors.New("warehouse: empty; want file:///abs/dir or s3://bucket/prefix")
	}
	u, err := url.Parse(wh)
	if err != nil {
		return nil, fmt.Errorf("warehouse %s: %v", redactURI(wh), urlErr(err))
	}
	switch u.Scheme {
	case "file":
		if (u.Host != "" && u.Host != "localhost") || !strings.HasPrefix(u.Path, "/") {
			return nil, fmt.Errorf("warehouse %s: want an absolute path, file:///abs/dir", redactURI(wh))
		}
	case "s3":
		if !s3BucketName.MatchString(u.Host) {
			return nil, fmt.Errorf("warehouse %s: %q is not an S3 bucket name; want s3://bucket/prefix", redactURI(wh), u.Host)
		}
	default:
		return nil, fmt.Errorf("warehouse %s: unsupported scheme %q; want file:///abs/dir or s3://bucket/prefix", redactURI(wh), u.Scheme)
	}
	return u, nil
}

// validate checks the settings of an s3:// warehouse.
func (s S3Config) validate() []error {
	var errs []error
	if s.Endpoint != "" {
		if err := checkEndpoint(s.Endpoint); err != nil {
			errs = append(errs, err)
		}
	} else if s.Region == "" {
		errs = append(errs, errors.New("s3.region: required for an s3:// warehouse on AWS; set S3.Region, AWS_REGION or AWS_DEFAULT_REGION (or S3.Endpoint for an S3-compatible store)"))
	}
	if (s.AccessKeyID == "") != (s.SecretAccessKey == "") {
		errs = append(errs, errors.New("s3.access-key-id, s3.secret-access-key: set both or neither"))
	}
	return errs
}

func checkEndpoint(ep string) error {
	u, err := url.Parse(ep)
	if err != nil {
		return fmt.Errorf("s3.endpoint %s: want http(s)://host[:port] (%v)", redactURI(ep), urlErr(err))
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("s3.endpoint %s: want http(s)://host[:port]", redactURI(ep))
	}
	return nil
}

// urlErr is the reason inside a url.Parse error, without the URL that
// url.Error repeats (it may hold a password).
func urlErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// secretQueryKeys are query parameters whose values are redacted in
// messages (libpq/pgx accept password= in the query string).
var secretQueryKeys = []string{"password", "token", "credential", "secret", "sslpassword"}

// redactURI is uri fit for a message: the password and secret query
// parameters replaced by "xxxxx". A URI that does not parse is shown as it
// is if it has no user info and no query, else reduced to its scheme.
func redactURI(uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		if !strings.ContainsAny(uri, "@?") {
			return uri
		}
		scheme, _, ok := strings.Cut(uri, "://")
		if !ok {
			return "(unparsable)"
		}
		return scheme + "://(unparsable)"
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			for _, s := range secretQueryKeys {
				if strings.EqualFold(k, s) {
					q.Set(k, "xxxxx")
				}
			}
		}
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// properties are the iceberg-go catalog properties of a resolved c: the
// warehouse and the S3 FileIO settings, which tables created through the
// catalog inherit, then c.Properties.
func (c StorageConfig) properties() iceberg.Properties {
	p := iceberg.Properties{}
	if c.Warehouse != "" {
		p["warehouse"] = c.Warehouse
	}
	s := c.S3
	setIf := func(k, v string) {
		if v != "" {
			p[k] = v
		}
	}
	setIf(icebergio.S3EndpointURL, s.Endpoint)
	setIf(icebergio.S3Region, s.Region)
	setIf(icebergio.S3AccessKeyID, s.AccessKeyID)
	setIf(icebergio.S3SecretAccessKey, s.SecretAccessKey)
	setIf(icebergio.S3SessionToken, s.SessionToken)
	if strings.HasPrefix(c.Warehouse, "s3://") || s.Endpoint != "" {
		p[icebergio.S3ForceVirtualAddressing] = strconv.FormatBool(!s.PathStyle)
	}
	maps.Copy(p, c.Properties)
	return p
}

// secrets are the values of c that must not appear in a message.
func (c StorageConfig) secrets() []string {
	var out []string
	if u, err := url.Parse(c.Catalog); err == nil {
		if pw, ok := u.User.Password(); ok {
			out = append(out, pw)
		}
		for k, vs := range u.Query() {
			for _, s := range secretQueryKeys {
				if strings.EqualFold(k, s) {
					out = append(out, vs...)
				}
			}
		}
	}
	out = append(out, c.S3.SecretAccessKey, c.S3.SessionToken)
	for k, v := range c.Properties {
		if isSecretProperty(k) {
			out = append(out, v)
		}
	}
	return out
}

// isSecretProperty tells whether a catalog property holds a secret
// ("token", "credential", "s3.secret-access-key", "adls.sas-token.…").
func isSecretProperty(key string) bool {
	k := strings.ToLower(key)
	for _, w := range []string{"token", "credential", "secret", "password", "jsonkey", "account.key", "connection-string"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// OpenCatalog opens the Iceberg catalog that c names, creating the SQL
// catalog's tables and a file:// warehouse directory if they are missing.
// Tables created through it put their metadata and data under c.Warehouse
// and read and write S3 with c.S3's settings. The catalog implements
// catalog.Closer: close it when done (for the SQL catalogs that closes the
// database connections too).
//
// Errors never contain the catalog password, the S3 secret key or session
// token, or a secret property's value.
func OpenCatalog(ctx context.Context, c StorageConfig) (catalog.Catalog, error) {
	c = c.resolve(os.Getenv)
	if err := c.validate(); err != nil {
		return nil, err
	}
	cat, err := c.open(ctx)
	if err != nil {
		return nil, redact(fmt.Errorf("open catalog %s: %w", redactURI(c.Catalog), err), c.secrets())
	}
	return cat, nil
}

// open opens a validated, resolved configuration's catalog.
func (c StorageConfig) open(ctx context.Context) (catalog.Catalog, error) {
	if strings.HasPrefix(c.Warehouse, "file://") {
		u, _ := url.Parse(c.Warehouse) // validated
		if err := os.MkdirAll(u.Path, 0o755); err != nil {
			return nil, fmt.Errorf("create warehouse: %w", err)
		}
	}
	kind, _ := parseCatalogURI(c.Catalog) // validated
	props := c.properties()
	switch kind {
	case kindSQLite:
		path, err := filepath.Abs(c.Catalog[len("sqlite://"):])
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fmt.Errorf("create catalog directory: %w", err)
		}
		return openSQL(ctx, c.Name, "sqlite", sqliteDSN(path), sqlcat.SQLite, props)
	case kindPostgres:
		return openSQL(ctx, c.Name, "pgx", c.Catalog, sqlcat.Postgres, props)
	default:
		return rest.NewCatalog(ctx, c.Name, c.Catalog, restOptions(props)...)
	}
}

// sqliteDSN is the modernc.org/sqlite DSN of the catalog file at path:
// WAL, so that readers in other processes (pyiceberg) see committed
// catalog rows while we write; a busy timeout, so that concurrent writers
// wait instead of failing; synchronous=FULL, so that a committed table
// pointer survives power loss (the metadata files it points to were
// written before); immediate write transactions, which take the write lock
// up front instead of failing when a read lock cannot be upgraded.
func sqliteDSN(path string) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.Itoa(sqliteBusyTimeoutMillis)+")")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Set("_txlock", "immediate")
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(path), RawQuery: q.Encode()}
	return u.String()
}

// sqlCatalog is iceberg-go's SQL catalog on a database handle that it owns.
// sqlcat.NewCatalog leaves a caller's handle open on Close; the registry
// path (catalog.Load) that would own it also merges ~/.iceberg-go.yaml into
// the properties, which a server must not do, so we own the handle here.
type sqlCatalog struct {
	*sqlcat.Catalog
	db *sql.DB
}

// Close closes the catalog and its database handle.
func (c *sqlCatalog) Close() error {
	return errors.Join(c.Catalog.Close(), c.db.Close())
}

func openSQL(ctx context.Context, name, driver, dsn string, dialect sqlcat.SupportedDialect, props iceberg.Properties) (catalog.Catalog, error) {
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, err
	}
	// NewCatalog creates the tables without a context: ping first so that
	// an unreachable database fails here, within ctx.
	if err := db.PingContext(ctx); err != nil {
		return nil, errors.Join(err, db.Close())
	}
	cat, err := sqlcat.NewCatalog(name, db, dialect, props)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("create catalog tables: %w", err), db.Close())
	}
	return &sqlCatalog{Catalog: cat, db: db}, nil
}

// restOptions turns properties into REST catalog options. The ones that
// authenticate the first request (GET /v1/config) must be options; the
// REST catalog parses the rest itself once it has merged the server's
// configuration. (catalog.Load would do this mapping, but it also merges
// ~/.iceberg-go.yaml.)
func restOptions(props iceberg.Properties) []rest.Option {
	opts := []rest.Option{rest.WithAdditionalProps(props)}
	if v := props["token"]; v != "" {
		opts = append(opts, rest.WithOAuthToken(v))
	}
	if v := props["credential"]; v != "" {
		opts = append(opts, rest.WithCredential(v))
	}
	if v := props["warehouse"]; v != "" {
		opts = append(opts, rest.WithWarehouseLocation(v))
	}
	if v := props["scope"]; v != "" {
		opts = append(opts, rest.WithScope(v))
	}
	if v := props["audience"]; v != "" {
		opts = append(opts, rest.WithAudience(v))
	}
	if v := props["resource"]; v != "" {
		opts = append(opts, rest.WithResource(v))
	}
	if v := props["oauth2-server-uri"]; v != "" {
		if u, err := url.Parse(v); err == nil {
			opts = append(opts, rest.WithAuthURI(u))
		}
	}
	return opts
}

// redactedError is an error whose message has had secrets removed; it
// still unwraps to the original for errors.Is and errors.As.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redact replaces every non-empty secret in err's message, as it is or
// URL-escaped, by "xxxxx". Drivers and SDKs sometimes echo connection
// strings; this is the net under them.
func redact(err error, secrets []string) error {
	msg := err.Error()
	for _, s := range secrets {
		if s == "" {
			continue
		}
		for _, form := range []string{s, url.QueryEscape(s), url.PathEscape(s)} {
			msg = strings.ReplaceAll(msg, form, "xxxxx")
		}
	}
	return &redactedError{msg: msg, err: err}
}
