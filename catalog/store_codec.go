package catalog

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// The JSON shapes stored in the tables and table_schemas rows. They are part
// of the on-disk format: change them only with a migration.
type (
	storedColumn struct {
		Name    string `json:"name"`
		Type    string `json:"type"` // TypeString, read back with ParseType
		NotNull bool   `json:"not_null,omitempty"`
	}
	storedPartition struct {
		Column    string `json:"column"`
		Transform string `json:"transform"`
	}
	// storedOptions are the resolved options: a table keeps the defaults
	// it was created with even if a later node or release changes them.
	storedOptions struct {
		BucketNum         int      `json:"bucket_num"`
		BucketKey         []string `json:"bucket_key"`
		LogCompression    string   `json:"log_compression"`
		LogRetention      int64    `json:"log_retention_ns"`
		LogSegmentBytes   int64    `json:"log_segment_bytes"`
		DatalakeEnabled   bool     `json:"datalake_enabled"`
		DatalakeFreshness int64    `json:"datalake_freshness_ns"`
		// DatalakeKeepOnDrop: absent in rows written before it was
		// stored; decodeRow then reads it from the raw options.
		DatalakeKeepOnDrop bool   `json:"datalake_keep_on_drop,omitempty"`
		MergeEngine        string `json:"merge_engine"`
		VersionColumn      string `json:"version_column"`
		// FieldAgg: the aggregation engine's functions by column; absent
		// for other tables.
		FieldAgg map[string]storedFieldAgg `json:"field_agg,omitempty"`
		// BucketReplicas, MinInsyncReplicas: 0 (absent) is the cluster's
		// default.
		BucketReplicas    int `json:"bucket_replicas,omitempty"`
		MinInsyncReplicas int `json:"min_insync_replicas,omitempty"`
	}
	storedFieldAgg struct {
		Func      string `json:"func"`
		Delimiter string `json:"delimiter,omitempty"`
	}
)

func encodeColumns(cols []Column) string {
	out := make([]storedColumn, len(cols))
	for i, c := range cols {
		out[i] = storedColumn{Name: c.Name, Type: TypeString(c.Type), NotNull: c.NotNull}
	}
	return mustJSON(out)
}

func decodeColumns(s string) ([]Column, error) {
	var in []storedColumn
	if err := json.Unmarshal([]byte(s), &in); err != nil {
		return nil, err
	}
	cols := make([]Column, len(in))
	for i, c := range in {
		t, err := ParseType(c.Type)
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", c.Name, err)
		}
		cols[i] = Column{Name: c.Name, Type: t, NotNull: c.NotNull}
	}
	return cols, nil
}

func encodePartition(p []PartitionField) string {
	out := make([]storedPartition, len(p))
	for i, f := range p {
		out[i] = storedPartition{Column: f.Column, Transform: string(f.Transform)}
	}
	return mustJSON(out)
}

func decodePartition(s string) ([]PartitionField, error) {
	var in []storedPartition
	if err := json.Unmarshal([]byte(s), &in); err != nil {
		return nil, err
	}
	var out []PartitionField // nil when empty, like a parsed table
	for _, f := range in {
		out = append(out, PartitionField{Column: f.Column, Transform: Transform(f.Transform)})
	}
	return out, nil
}

func encodeOptions(o Options) string {
	return mustJSON(storedOptions{
		BucketNum: o.BucketNum, BucketKey: o.BucketKey,
		LogCompression: string(o.LogCompression), LogRetention: int64(o.LogRetention),
		LogSegmentBytes: o.LogSegmentBytes, DatalakeEnabled: o.DatalakeEnabled,
		DatalakeFreshness: int64(o.DatalakeFreshness), DatalakeKeepOnDrop: o.DatalakeKeepOnDrop,
		MergeEngine: string(o.MergeEngine), VersionColumn: o.VersionColumn,
		FieldAgg:       encodeFieldAgg(o.FieldAgg),
		BucketReplicas: o.BucketReplicas, MinInsyncReplicas: o.MinInsyncReplicas,
	})
}

func encodeFieldAgg(m map[string]FieldAgg) map[string]storedFieldAgg {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]storedFieldAgg, len(m))
	for k, v := range m {
		out[k] = storedFieldAgg{Func: v.Func, Delimiter: v.Delimiter}
	}
	return out
}

func decodeFieldAgg(m map[string]storedFieldAgg) map[string]FieldAgg {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]FieldAgg, len(m))
	for k, v := range m {
		out[k] = FieldAgg{Func: v.Func, Delimiter: v.Delimiter}
	}
	return out
}

func decodeOptions(s string) (Options, error) {
	var in storedOptions
	if err := json.Unmarshal([]byte(s), &in); err != nil {
		return Options{}, err
	}
	return Options{
		BucketNum: in.BucketNum, BucketKey: in.BucketKey,
		LogCompression: Compression(in.LogCompression), LogRetention: time.Duration(in.LogRetention),
		LogSegmentBytes: in.LogSegmentBytes, DatalakeEnabled: in.DatalakeEnabled,
		DatalakeFreshness: time.Duration(in.DatalakeFreshness), DatalakeKeepOnDrop: in.DatalakeKeepOnDrop,
		MergeEngine: MergeEngine(in.MergeEngine), VersionColumn: in.VersionColumn,
		FieldAgg:       decodeFieldAgg(in.FieldAgg),
		BucketReplicas: in.BucketReplicas, MinInsyncReplicas: in.MinInsyncReplicas,
	}, nil
}

// mustJSON marshals v, which is always one of the stored shapes above:
// they cannot fail to marshal.
func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("catalog: marshal %T: %v", v, err))
	}
	return string(b)
}

func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// loadSnapshot reads the whole catalog. A table whose stored definition
// cannot be decoded, or breaks the limits the parser keeps (a type nested
// deeper than MaxTypeDepth, saved by an older release), does not stop the
// load: it goes to the snapshot's broken tables, which callers report and
// DROP TABLE removes. Only a catalog that cannot be read at all fails.
func loadSnapshot(ctx context.Context, db querier) (*snapshot, error) {
	s := newSnapshot()
	if err := loadDatabases(ctx, db, s); err != nil {
		return nil, err
	}
	tables, err := loadTables(ctx, db, s)
	if err != nil {
		return nil, err
	}
	if err := loadSchemas(ctx, db, tables, s); err != nil {
		return nil, err
	}
	if err := loadViews(ctx, db, s); err != nil {
		return nil, err
	}
	for _, t := range tables {
		if len(t.schemas) != int(t.SchemaID)+1 {
			s.putBroken(t, fmt.Errorf("has %d schema versions, current is %d", len(t.schemas), t.SchemaID))
			continue
		}
		t.Columns = t.schemas[t.SchemaID].Columns
		s.putTable(t)
	}
	return s, nil
}

func loadDatabases(ctx context.Context, db querier, s *snapshot) error {
	rows, err := db.QueryContext(ctx, `SELECT name FROM databases`)
	if err != nil {
		return fmt.Errorf("read databases: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return fmt.Errorf("read databases: %w", err)
		}
		s.dbs[name] = true
	}
	return rows.Err()
}

// loadTables reads the tables rows; one that does not decode goes to s's
// broken tables.
func loadTables(ctx context.Context, db querier, s *snapshot) (map[int64]*Table, error) {
	rows, err := db.QueryContext(ctx, `SELECT id, db, name, schema_id, primary_key,
		partition_spec, options, raw_options, created_at, lake_created_at FROM tables`)
	if err != nil {
		return nil, fmt.Errorf("read tables: %w", err)
	}
	defer rows.Close()
	tables := make(map[int64]*Table)
	for rows.Next() {
		t, err := scanTable(rows)
		if err != nil {
			var de *decodeError
			if !errors.As(err, &de) {
				return nil, fmt.Errorf("read tables: %w", err)
			}
			s.putBroken(t, de.err)
			continue
		}
		tables[t.ID] = t
	}
	return tables, rows.Err()
}

// decodeError is a stored value of one table that does not decode.
type decodeError struct{ err error }

func (e *decodeError) Error() string { return e.err.Error() }
func (e *decodeError) Unwrap() error { return e.err }

// scanTable decodes one tables row (everything but the schemas). A row
// that scans but does not decode returns its table (ID and names) with a
// *decodeError.
func scanTable(rows *sql.Rows) (*Table, error) {
	var t Table
	var pk, part, opts, raw string
	var created, lakeCreated int64
	if err := rows.Scan(&t.ID, &t.DB, &t.Name, &t.SchemaID, &pk, &part, &opts, &raw, &created, &lakeCreated); err != nil {
		return nil, err
	}
	if err := t.decodeRow(pk, part, opts, raw); err != nil {
		return &t, &decodeError{err}
	}
	t.CreatedAt = fromMicros(created)
	if lakeCreated != 0 {
		t.LakeCreatedAt = fromMicros(lakeCreated)
	}
	return &t, nil
}

// loadSchemas reads every table's schema versions; a table with one that
// does not decode, or is out of sequence, moves from tables to s's broken
// tables.
func loadSchemas(ctx context.Context, db querier, tables map[int64]*Table, s *snapshot) error {
	rows, err := db.QueryContext(ctx, `SELECT table_id, schema_id, columns, created_at
		FROM table_schemas ORDER BY table_id, schema_id`)
	if err != nil {
		return fmt.Errorf("read table schemas: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, created int64
		var sid int32
		var cols string
		if err := rows.Scan(&id, &sid, &cols, &created); err != nil {
			return fmt.Errorf("read table schemas: %w", err)
		}
		t := tables[id]
		if t == nil {
			continue // a broken table's, or an orphan row: no table to load
		}
		if int(sid) != len(t.schemas) {
			s.putBroken(t, fmt.Errorf("schema version %d is out of sequence", sid))
			delete(tables, id)
			continue
		}
		columns, err := decodeColumns(cols)
		if err != nil {
			s.putBroken(t, fmt.Errorf("schema version %d: %w", sid, err))
			delete(tables, id)
			continue
		}
		t.schemas = append(t.schemas, newSchema(sid, columns, fromMicros(created)))
	}
	return rows.Err()
}

// decodeRow decodes the JSON columns of a tables row into t.
func (t *Table) decodeRow(pk, part, opts, raw string) error {
	if err := json.Unmarshal([]byte(pk), &t.PrimaryKey); err != nil {
		return fmt.Errorf("primary key: %w", err)
	}
	if len(t.PrimaryKey) == 0 {
		t.PrimaryKey = nil // like a parsed table
	}
	var err error
	if t.Partition, err = decodePartition(part); err != nil {
		return fmt.Errorf("partition spec: %w", err)
	}
	if t.Options, err = decodeOptions(opts); err != nil {
		return fmt.Errorf("options: %w", err)
	}
	if err := json.Unmarshal([]byte(raw), &t.RawOptions); err != nil {
		return fmt.Errorf("raw options: %w", err)
	}
	// Rows written before datalake.keep-on-drop was stored resolved have
	// it only as written.
	if v, ok := t.RawOptions[OptDatalakeKeepOnDrop]; ok && !t.Options.DatalakeKeepOnDrop {
		t.Options.DatalakeKeepOnDrop, _ = strconv.ParseBool(v)
	}
	return nil
}
