package catalog

import (
	"errors"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Table option names (docs/sql.md, "Table options"; named as in Fluss where
// Fluss has one).
const (
	OptBucketNum          = "bucket.num"
	OptBucketKey          = "bucket.key"
	OptLogCompression     = "log.compression"
	OptLogRetention       = "log.retention"
	OptLogSegmentBytes    = "log.segment.bytes"
	OptDatalakeEnabled    = "datalake.enabled"
	OptDatalakeFreshness  = "datalake.freshness"
	OptDatalakeKeepOnDrop = "datalake.keep-on-drop"
	OptMergeEngine        = "merge-engine"
	OptVersionColumn      = "merge-engine.versioned.ver-column"
	OptBucketReplicas     = "bucket.replicas"
	OptMinInsyncReplicas  = "min.insync.replicas"
)

// Compression is the Arrow IPC body compression of log batches.
type Compression string

// The log compressions.
const (
	CompressionZstd Compression = "zstd"
	CompressionLZ4  Compression = "lz4"
	CompressionNone Compression = "none"
)

// MergeEngine says how a primary-key table merges rows with the same key.
type MergeEngine string

// The merge engines. Log tables have MergeEngineNone.
const (
	MergeEngineNone      MergeEngine = ""
	MergeEngineLastRow   MergeEngine = "last_row"  // the newest row wins
	MergeEngineFirstRow  MergeEngine = "first_row" // the first row wins; later ones are dropped
	MergeEngineVersioned MergeEngine = "versioned" // the row with the highest version column wins
	// MergeEngineAggregation aggregates each column with its function
	// (fields.<col>.agg).
	MergeEngineAggregation MergeEngine = "aggregation"
)

// Per-column options of the aggregation merge engine: fields.<col>.agg and
// fields.<col>.listagg-delimiter.
const (
	optFieldsPrefix    = "fields."
	optAggSuffix       = ".agg"
	optDelimiterSuffix = ".listagg-delimiter"
)

// AggFuncs are the aggregation functions of fields.<col>.agg.
var AggFuncs = []string{"sum", "min", "max", "count", "last_value", "last_non_null_value", "first_value", "bool_and", "bool_or", "listagg"}

// Option limits.
const (
	MaxBucketNum       = 1024
	MaxBucketReplicas  = 16
	MinLogSegmentBytes = 1 << 20
	// MaxLogSegmentBytes keeps segment positions within 31 bits, like
	// Kafka's segment.bytes, so that sparse indexes can store 32-bit positions.
	MaxLogSegmentBytes = 1<<31 - 1
)

// Options are a table's typed options. The zero value is not useful; start
// from DefaultOptions.
type Options struct {
	// BucketNum is the number of buckets (per partition when partitioned),
	// 1..1024. Default: Config.DefaultBucketNum (itself default 1).
	BucketNum int
	// BucketKey are the hash bucketing columns. Default: the primary key,
	// else none; none spreads batches round-robin.
	BucketKey []string
	// LogCompression is the log's Arrow IPC body compression. Default: lz4,
	// chosen by measurement (docs/benchmarks.md, "The log's codec"): about
	// half zstd's CPU to write and a third to read, for batches 1.7 times
	// zstd's size; the lake, where the bytes stay, is Parquet with zstd.
	LogCompression Compression
	// LogRetention is how long the local log is kept, also after tiering.
	// Default: 7d.
	LogRetention time.Duration
	// LogSegmentBytes is the segment roll size, 1MiB..2GiB-1. Default: 256MiB.
	LogSegmentBytes int64
	// DatalakeEnabled tiers the table into Iceberg. Default: true.
	DatalakeEnabled bool
	// DatalakeFreshness is the target lag of the lake. Default: 30s.
	DatalakeFreshness time.Duration
	// DatalakeKeepOnDrop keeps the Iceberg table (metadata and data files)
	// when the table is dropped. Default: false, DROP TABLE drops both.
	DatalakeKeepOnDrop bool
	// MergeEngine applies to primary-key tables only. Default: last_row for
	// primary-key tables, MergeEngineNone for log tables.
	MergeEngine MergeEngine
	// VersionColumn is the version column of the versioned merge engine.
	VersionColumn string
	// FieldAgg are the aggregation merge engine's functions, by column name
	// (fields.<col>.agg, fields.<col>.listagg-delimiter); columns not
	// listed take last_non_null_value.
	FieldAgg map[string]FieldAgg
	// BucketReplicas is how many nodes of a cluster hold each bucket,
	// 1..16; a single node ignores it. Default 0: the cluster's default
	// (3), at most the nodes alive when the table is created.
	BucketReplicas int
	// MinInsyncReplicas is how many replicas of a bucket, its leader
	// included, must hold a write before it is acknowledged in a cluster,
	// 1..16; a write is refused while fewer are in sync. Default 0: 2, at
	// most the bucket's replicas.
	MinInsyncReplicas int
}

// FieldAgg is the aggregation of one column of an aggregation merge
// engine table.
type FieldAgg struct {
	Func      string
	Delimiter string // of listagg; default ","
}

// DefaultOptions returns the defaults for a log table with bucketNum buckets.
func DefaultOptions(bucketNum int) Options {
	return Options{
		BucketNum:         bucketNum,
		LogCompression:    CompressionLZ4,
		LogRetention:      7 * 24 * time.Hour,
		LogSegmentBytes:   256 << 20,
		DatalakeEnabled:   true,
		DatalakeFreshness: 30 * time.Second,
	}
}

// optionSpec parses one option into Options. accepts describes valid values
// for error messages.
type optionSpec struct {
	accepts string
	apply   func(o *Options, v string) bool
}

var optionSpecs = map[string]optionSpec{
	OptBucketNum: {"an integer from 1 to 1024", func(o *Options, v string) bool {
		n, err := strconv.Atoi(v)
		o.BucketNum = n
		return err == nil && n >= 1 && n <= MaxBucketNum
	}},
	OptBucketKey: {"comma-separated column names", func(o *Options, v string) bool {
		o.BucketKey = splitList(v)
		return len(o.BucketKey) > 0
	}},
	OptLogCompression: {"one of zstd, lz4, none", func(o *Options, v string) bool {
		o.LogCompression = Compression(strings.ToLower(v))
		return oneOf(string(o.LogCompression), "zstd", "lz4", "none")
	}},
	OptLogRetention: {`a positive duration such as "7d", "12h" or "1h30m"`, func(o *Options, v string) bool {
		d, err := ParseDuration(v)
		o.LogRetention = d
		return err == nil
	}},
	OptLogSegmentBytes: {`a size from 1MiB to 2GiB-1 such as "256MiB", "1GB" or "1048576"`, func(o *Options, v string) bool {
		n, err := ParseSize(v)
		o.LogSegmentBytes = n
		return err == nil && n >= MinLogSegmentBytes && n <= MaxLogSegmentBytes
	}},
	OptDatalakeEnabled: {"true or false", func(o *Options, v string) bool {
		b, err := strconv.ParseBool(strings.ToLower(v))
		o.DatalakeEnabled = b
		return err == nil && oneOf(strings.ToLower(v), "true", "false")
	}},
	OptDatalakeFreshness: {`a positive duration such as "30s" or "5m"`, func(o *Options, v string) bool {
		d, err := ParseDuration(v)
		o.DatalakeFreshness = d
		return err == nil
	}},
	OptDatalakeKeepOnDrop: {"true or false", func(o *Options, v string) bool {
		b, err := strconv.ParseBool(strings.ToLower(v))
		o.DatalakeKeepOnDrop = b
		return err == nil && oneOf(strings.ToLower(v), "true", "false")
	}},
	OptMergeEngine: {"one of last_row, first_row, versioned, aggregation", func(o *Options, v string) bool {
		o.MergeEngine = MergeEngine(strings.ToLower(v))
		return oneOf(string(o.MergeEngine), "last_row", "first_row", "versioned", "aggregation")
	}},
	OptBucketReplicas: {"an integer from 1 to 16", func(o *Options, v string) bool {
		n, err := strconv.Atoi(v)
		o.BucketReplicas = n
		return err == nil && n >= 1 && n <= MaxBucketReplicas
	}},
	OptMinInsyncReplicas: {"an integer from 1 to 16", func(o *Options, v string) bool {
		n, err := strconv.Atoi(v)
		o.MinInsyncReplicas = n
		return err == nil && n >= 1 && n <= MaxBucketReplicas
	}},
	OptVersionColumn: {"a column name", func(o *Options, v string) bool {
		o.VersionColumn = strings.TrimSpace(v)
		return o.VersionColumn != ""
	}},
}

// ParseOptions parses raw WITH options over DefaultOptions(defaultBucketNum)
// and reports every unknown option and bad value at once (errors.Join; each
// matches ErrInvalid). It checks values only: what depends on the columns
// (bucket.key and ver-column names, merge-engine defaults) is done by Resolve.
func ParseOptions(raw map[string]string, defaultBucketNum int) (Options, error) {
	o := DefaultOptions(defaultBucketNum)
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs []error
	for _, k := range keys {
		spec, ok := optionSpecs[k]
		if !ok {
			if col, suffix, isField := fieldOption(k); isField {
				if err := o.parseFieldOption(k, col, suffix, raw[k]); err != nil {
					errs = append(errs, err)
				}
				continue
			}
			errs = append(errs, unknownOption(k))
			continue
		}
		// Apply to a copy so that a bad value leaves the default in place
		// for the checks that follow.
		next := o
		if spec.apply(&next, strings.TrimSpace(raw[k])) {
			o = next
		} else {
			errs = append(errs, invalidf("option %q: invalid value %q: expected %s", k, raw[k], spec.accepts))
		}
	}
	return o, errors.Join(errs...)
}

func unknownOption(k string) error {
	names := make([]string, 0, len(optionSpecs))
	for n := range optionSpecs {
		names = append(names, n)
	}
	if s := suggest(strings.TrimPrefix(k, "table."), names); s != "" {
		return invalidf("unknown option %q (did you mean %q?)", k, s)
	}
	return invalidf("unknown option %q", k)
}

// splitList splits a comma-separated list, trimming spaces and dropping
// empty items.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func oneOf(v string, accepted ...string) bool {
	for _, a := range accepted {
		if v == a {
			return true
		}
	}
	return false
}

// fieldOption splits "fields.<col>.agg" and "fields.<col>.listagg-delimiter".
func fieldOption(k string) (col, suffix string, ok bool) {
	rest, ok := strings.CutPrefix(k, optFieldsPrefix)
	if !ok {
		return "", "", false
	}
	for _, suf := range []string{optAggSuffix, optDelimiterSuffix} {
		if c, ok := strings.CutSuffix(rest, suf); ok && c != "" {
			return c, suf, true
		}
	}
	return "", "", false
}

// parseFieldOption parses one per-column option of the aggregation engine
// into o.FieldAgg (the column name is resolved against the columns later).
func (o *Options) parseFieldOption(k, col, suffix, v string) error {
	if o.FieldAgg == nil {
		o.FieldAgg = map[string]FieldAgg{}
	}
	fa := o.FieldAgg[col]
	switch suffix {
	case optAggSuffix:
		fn := strings.ToLower(strings.TrimSpace(v))
		if !oneOf(fn, AggFuncs...) {
			return invalidf("option %q: invalid value %q: expected one of %s", k, v, strings.Join(AggFuncs, ", "))
		}
		fa.Func = fn
	default:
		if v == "" {
			return invalidf("option %q: the delimiter is empty", k)
		}
		fa.Delimiter = v // not trimmed: " " is a delimiter
	}
	o.FieldAgg[col] = fa
	return nil
}
