package catalog

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// reservedColumns are the metadata columns of "t$changelog" reads; a user
// column of the same name would be shadowed there.
var reservedColumns = map[string]bool{
	"_change_type": true, "_bucket": true, "_offset": true, "_commit_timestamp": true,
}

// Resolve validates a parsed CREATE TABLE and fills in every default,
// returning the table it defines (without ID and creation time, which the
// store assigns). An empty database means DefaultDatabase. Every problem is
// reported at once (errors.Join, each matching ErrInvalid). Primary-key
// columns become NOT NULL.
func (s *CreateTable) Resolve(cfg Config) (*Table, error) {
	cfg.EnsureDefaults()
	t := &Table{
		DB:         s.Table.DB,
		Name:       s.Table.Name,
		PrimaryKey: append([]string(nil), s.PrimaryKey...),
		Partition:  append([]PartitionField(nil), s.Partition...),
		RawOptions: make(map[string]string, len(s.Options)),
	}
	for k, v := range s.Options {
		t.RawOptions[k] = v
	}
	if t.DB == "" {
		t.DB = DefaultDatabase
	}
	r := &resolver{t: t}
	r.add(cfg.Validate())
	r.checkName()
	t.Columns = r.columns(s.Columns)
	r.primaryKey()
	r.partition()
	opts, err := ParseOptions(t.RawOptions, cfg.DefaultBucketNum)
	r.add(err)
	t.Options = opts
	r.bucketKey()
	r.mergeEngine()
	if err := errors.Join(r.errs...); err != nil {
		return nil, err
	}
	t.schemas = []*Schema{newSchema(0, t.Columns, t.CreatedAt)}
	return t, nil
}

// resolver collects the problems of one table definition.
type resolver struct {
	t    *Table
	errs []error
}

func (r *resolver) add(err error) {
	if err != nil {
		r.errs = append(r.errs, err)
	}
}

func (r *resolver) addf(format string, args ...any) { r.add(invalidf(format, args...)) }

// checkName checks the table's name. The database's was checked when it
// was created.
func (r *resolver) checkName() { r.add(checkObjectName("table", r.t.Name)) }

// columns returns a copy of cols, checking names and the PK's NOT NULL.
func (r *resolver) columns(cols []Column) []Column {
	if len(cols) == 0 {
		r.addf("table %q has no columns", r.t.Name)
	}
	if err := checkWidth(quoteName(r.t.Name), cols); err != nil {
		r.add(err)
		return nil // so many columns are not checked one by one
	}
	out := make([]Column, len(cols))
	seen := make(map[string]bool, len(cols))
	for i, c := range cols {
		if err := checkColumn(c); err != nil {
			r.add(err)
		}
		// DuckDB resolves column names ignoring case, so "a" and "A" could
		// never both be queried.
		if seen[strings.ToLower(c.Name)] {
			r.addf("column %q is defined more than once (names differ only in case)", c.Name)
		}
		seen[strings.ToLower(c.Name)] = true
		c.NotNull = c.NotNull || contains(r.t.PrimaryKey, c.Name)
		out[i] = c
	}
	return out
}

func (r *resolver) primaryKey() {
	seen := make(map[string]bool)
	for _, name := range r.t.PrimaryKey {
		if seen[name] {
			r.addf("primary key column %q is listed more than once", name)
		}
		seen[name] = true
		i := columnIndex(r.t.Columns, name)
		if i < 0 {
			r.addf("primary key column %q does not exist", name)
			continue
		}
		switch typ := r.t.Columns[i].Type; {
		case typ.IsNested():
			r.addf("primary key column %q has type %s: LIST, STRUCT and MAP cannot be keys", name, typ)
		case typ.Kind == KindFloat || typ.Kind == KindDouble:
			r.addf("primary key column %q has type %s: FLOAT and DOUBLE cannot be keys (equal values can differ in their bits, and NaN equals nothing)", name, typ)
		}
	}
}

func (r *resolver) partition() {
	seen := make(map[PartitionField]bool)
	timeOf := make(map[string]PartitionField) // a column's time transform
	for _, f := range r.t.Partition {
		if seen[f] {
			r.addf("partition field %s is listed more than once", f)
		}
		seen[f] = true
		if f.Transform != TransformIdentity {
			key := strings.ToLower(f.Column)
			if prev, ok := timeOf[key]; ok && prev != f {
				// As in Iceberg: the coarser one is implied by the finer.
				r.addf("partition fields %s and %s: a column takes one time transform", prev, f)
			}
			timeOf[key] = f
		}
		i := columnIndex(r.t.Columns, f.Column)
		if i < 0 {
			r.addf("partition column %q does not exist", f.Column)
			continue
		}
		if msg := transformProblem(f.Transform, r.t.Columns[i].Type); msg != "" {
			r.addf("partition field %s: %s", f, msg)
		}
		r.add(checkPathName("partition column", f.Column))
		if r.t.HasPrimaryKey() && !contains(r.t.PrimaryKey, f.Column) {
			r.addf("partition column %q must be part of the primary key, so that each key lives in one partition", f.Column)
		}
	}
}

// transformProblem says why transform tr cannot apply to type t, or "".
func transformProblem(tr Transform, t Type) string {
	switch {
	case t.IsNested():
		return "cannot partition by a " + t.Kind.String() + " column"
	case tr == TransformHour && t.Kind != KindTimestamp && t.Kind != KindTimestampTZ:
		return "hour() needs a TIMESTAMP or TIMESTAMPTZ column, not " + t.String()
	case tr != TransformIdentity && tr != TransformHour &&
		t.Kind != KindDate && t.Kind != KindTimestamp && t.Kind != KindTimestampTZ:
		return string(tr) + "() needs a DATE, TIMESTAMP or TIMESTAMPTZ column, not " + t.String()
	}
	return ""
}

// bucketable are the types Iceberg's bucket transform hashes; the log uses
// the same hash so that log and lake buckets line up (docs/lake.md).
func bucketable(t Type) bool {
	switch t.Kind {
	case KindBoolean, KindFloat, KindDouble, KindList, KindStruct, KindMap:
		return false
	}
	return true
}

func (r *resolver) bucketKey() {
	o := &r.t.Options
	if _, set := r.t.RawOptions[OptBucketKey]; !set {
		o.BucketKey = r.t.PrimaryKey
		for _, name := range o.BucketKey {
			r.add(checkPathName("bucket key column", name))
		}
		return
	}
	keys := make([]string, 0, len(o.BucketKey))
	for _, name := range o.BucketKey {
		col, ok := r.optionColumn(OptBucketKey, name)
		if !ok {
			continue
		}
		keys = append(keys, col.Name)
		r.add(checkPathName("bucket key column", col.Name))
		if !bucketable(col.Type) {
			r.addf("option %q: column %q has type %s, which cannot be hashed into buckets (BOOLEAN, FLOAT, DOUBLE and nested types cannot)", OptBucketKey, col.Name, col.Type)
		}
		if r.t.HasPrimaryKey() && !contains(r.t.PrimaryKey, col.Name) {
			r.addf("option %q: column %q is not in the primary key; the bucket key of a primary-key table must be part of it", OptBucketKey, col.Name)
		}
	}
	o.BucketKey = keys
}

// optionColumn finds the column an option names: exactly, or else by a
// unique case-insensitive match, since option values are not case-folded
// like identifiers.
func (r *resolver) optionColumn(opt, name string) (Column, bool) {
	if i := columnIndex(r.t.Columns, name); i >= 0 {
		return r.t.Columns[i], true
	}
	var found []Column
	for _, c := range r.t.Columns {
		if strings.EqualFold(c.Name, name) {
			found = append(found, c)
		}
	}
	if len(found) == 1 {
		return found[0], true
	}
	r.addf("option %q: column %q does not exist", opt, name)
	return Column{}, false
}

func (r *resolver) mergeEngine() {
	o := &r.t.Options
	_, engineSet := r.t.RawOptions[OptMergeEngine]
	_, verSet := r.t.RawOptions[OptVersionColumn]
	switch {
	case !r.t.HasPrimaryKey():
		if engineSet {
			r.addf("option %q applies only to primary-key tables", OptMergeEngine)
		}
		o.MergeEngine = MergeEngineNone
	case o.MergeEngine == MergeEngineNone:
		o.MergeEngine = MergeEngineLastRow
	}
	r.fieldAggs()
	if o.MergeEngine == MergeEngineVersioned && !verSet {
		r.addf("merge-engine %q requires option %q", MergeEngineVersioned, OptVersionColumn)
	}
	if !verSet || o.VersionColumn == "" {
		return
	}
	if o.MergeEngine != MergeEngineVersioned {
		r.addf("option %q needs %q = %q", OptVersionColumn, OptMergeEngine, MergeEngineVersioned)
	}
	if col, ok := r.optionColumn(OptVersionColumn, o.VersionColumn); ok {
		o.VersionColumn = col.Name
		if !oneOf(col.Type.Kind.String(), "INTEGER", "BIGINT", "TIMESTAMP", "TIMESTAMPTZ") {
			r.addf("option %q: column %q has type %s; a version column must be INTEGER, BIGINT, TIMESTAMP or TIMESTAMPTZ", OptVersionColumn, col.Name, col.Type)
		}
	}
}

// fieldAggs checks the aggregation engine's per-column functions and keys
// them by the columns' names.
func (r *resolver) fieldAggs() {
	o := &r.t.Options
	if len(o.FieldAgg) == 0 {
		return
	}
	if o.MergeEngine != MergeEngineAggregation {
		r.addf("options fields.<column>.agg and fields.<column>.listagg-delimiter need %q = %q", OptMergeEngine, MergeEngineAggregation)
		return
	}
	names := make([]string, 0, len(o.FieldAgg))
	for n := range o.FieldAgg {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make(map[string]FieldAgg, len(o.FieldAgg))
	for _, name := range names {
		fa := o.FieldAgg[name]
		opt := optFieldsPrefix + name + optAggSuffix
		col, ok := r.optionColumn(opt, name)
		if !ok {
			continue
		}
		if fa.Func == "" {
			fa.Func = "last_non_null_value"
		}
		if fa.Delimiter != "" && fa.Func != "listagg" {
			r.addf("option %q applies only to a column whose function is listagg (%q is %s)", optFieldsPrefix+name+optDelimiterSuffix, col.Name, fa.Func)
		}
		if fa.Func == "listagg" && fa.Delimiter == "" {
			fa.Delimiter = ","
		}
		if contains(r.t.PrimaryKey, col.Name) {
			r.addf("option %q: column %q is part of the primary key, which is not aggregated", opt, col.Name)
		}
		if msg := aggTypeProblem(fa.Func, col.Type); msg != "" {
			r.addf("option %q: %s cannot aggregate column %q of type %s: %s", opt, fa.Func, col.Name, col.Type, msg)
		}
		out[col.Name] = fa
	}
	o.FieldAgg = out
}

// aggTypeProblem says why function fn cannot aggregate a column of type t,
// or "".
func aggTypeProblem(fn string, t Type) string {
	numeric := oneOf(t.Kind.String(), "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL")
	ordered := numeric || oneOf(t.Kind.String(), "VARCHAR", "DATE", "TIME", "TIMESTAMP", "TIMESTAMPTZ")
	switch fn {
	case "sum":
		if !numeric {
			return "it needs a number (TINYINT, SMALLINT, INTEGER, BIGINT, FLOAT, DOUBLE or DECIMAL)"
		}
	case "min", "max":
		if !ordered {
			return "it needs a number, VARCHAR, DATE, TIME or TIMESTAMP"
		}
	case "count":
		if !oneOf(t.Kind.String(), "INTEGER", "BIGINT") {
			return "it needs INTEGER or BIGINT"
		}
	case "bool_and", "bool_or":
		if t.Kind != KindBoolean {
			return "it needs BOOLEAN"
		}
	case "listagg":
		if t.Kind != KindVarchar {
			return "it needs VARCHAR"
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// checkColumn checks what the parser guarantees for columns built in code
// (ColumnsFromArrow, ADD COLUMN from a client), and what the parser leaves
// to the definition: the name rules (limits.go) and a valid type within
// MaxTypeDepth.
func checkColumn(c Column) error {
	if err := checkFieldName("column", c.Name); err != nil {
		return err
	}
	if reservedColumns[c.Name] {
		return invalidf("column name %q is reserved for changelog metadata", c.Name)
	}
	if err := checkType(c.Type, 0); err != nil {
		return invalidf("column %s: %v", quoteName(c.Name), err)
	}
	return nil
}

// checkType reports what makes t unusable: an unknown kind, a DECIMAL out of
// range, a missing child type, a nested MAP key, a bad or repeated STRUCT
// field name, nesting deeper than MaxTypeDepth. level is the number of
// nested types around t.
func checkType(t Type, level int) error {
	if t.IsNested() && level >= MaxTypeDepth {
		return fmt.Errorf("the type nests LIST, STRUCT and MAP deeper than the limit of %d levels", MaxTypeDepth)
	}
	switch t.Kind {
	case KindDecimal:
		if t.Precision < 1 || t.Precision > MaxDecimalPrecision || t.Scale < 0 || t.Scale > t.Precision {
			return fmt.Errorf("DECIMAL(%d,%d) needs a precision of 1..%d and a scale of 0..precision", t.Precision, t.Scale, MaxDecimalPrecision)
		}
	case KindList:
		if t.Elem == nil {
			return errors.New("LIST without an element type")
		}
		return checkType(*t.Elem, level+1)
	case KindMap:
		return checkMapType(t, level)
	case KindStruct:
		return checkStructType(t, level)
	default:
		if t.Kind == 0 || t.Kind > KindMap {
			return fmt.Errorf("invalid type kind %d", t.Kind)
		}
	}
	return nil
}

func checkMapType(t Type, level int) error {
	if t.Key == nil || t.Value == nil {
		return errors.New("MAP without a key or value type")
	}
	if t.Key.IsNested() {
		return fmt.Errorf("MAP key must be a primitive type, not %s", t.Key)
	}
	if err := checkType(*t.Key, level+1); err != nil {
		return err
	}
	return checkType(*t.Value, level+1)
}

// checkStructType also refuses field names that differ only in case, as
// DuckDB does ("Duplicate type parameter").
func checkStructType(t Type, level int) error {
	if len(t.Fields) == 0 {
		return errors.New("STRUCT without fields")
	}
	seen := make(map[string]bool, len(t.Fields))
	for _, f := range t.Fields {
		if err := checkFieldName("STRUCT field", f.Name); err != nil {
			return err
		}
		key := strings.ToLower(f.Name)
		if seen[key] {
			return fmt.Errorf("STRUCT field name %s is repeated (names that differ only in case are the same field)", quoteName(f.Name))
		}
		seen[key] = true
		if err := checkType(f.Type, level+1); err != nil {
			return err
		}
	}
	return nil
}
