package catalog

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestOptionDefaults(t *testing.T) {
	got, err := ParseOptions(nil, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := Options{
		BucketNum:         3,
		LogCompression:    CompressionLZ4,
		LogRetention:      7 * 24 * time.Hour,
		LogSegmentBytes:   256 << 20,
		DatalakeEnabled:   true,
		DatalakeFreshness: 30 * time.Second,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("defaults = %+v, want %+v", got, want)
	}
}

func TestOptionValues(t *testing.T) {
	got, err := ParseOptions(map[string]string{
		OptBucketNum:         "16",
		OptBucketKey:         " a , b ",
		OptLogCompression:    "LZ4",
		OptLogRetention:      "1d12h",
		OptLogSegmentBytes:   "1GB",
		OptDatalakeEnabled:   "FALSE",
		OptDatalakeFreshness: "1h30m",
		OptMergeEngine:       "versioned",
		OptVersionColumn:     "ver",
	}, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := Options{
		BucketNum: 16, BucketKey: []string{"a", "b"}, LogCompression: CompressionLZ4,
		LogRetention: 36 * time.Hour, LogSegmentBytes: 1e9, DatalakeEnabled: false,
		DatalakeFreshness: 90 * time.Minute, MergeEngine: MergeEngineVersioned, VersionColumn: "ver",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

func TestOptionErrorsAllAtOnce(t *testing.T) {
	_, err := ParseOptions(map[string]string{
		"bucket.nmu":         "4",
		"table.merge-engine": "first_row",
		"colour":             "red",
		OptBucketNum:         "0",
		OptLogCompression:    "gzip",
		OptLogRetention:      "forever",
		OptLogSegmentBytes:   "1KiB",
		OptDatalakeEnabled:   "yes",
		OptDatalakeFreshness: "-5s",
		OptMergeEngine:       "newest",
		OptBucketKey:         " , ",
		OptVersionColumn:     " ",
		OptBucketReplicas:    "17",
		OptMinInsyncReplicas: "0",
	}, 1)
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
	for _, want := range []string{
		`unknown option "bucket.nmu" (did you mean "bucket.num"?)`,
		`unknown option "table.merge-engine" (did you mean "merge-engine"?)`,
		`unknown option "colour"` + "\n",
		`option "bucket.num": invalid value "0": expected an integer from 1 to 1024`,
		`option "log.compression": invalid value "gzip": expected one of zstd, lz4, none`,
		`option "log.retention": invalid value "forever": expected a positive duration`,
		`option "log.segment.bytes": invalid value "1KiB": expected a size from 1MiB to 2GiB-1`,
		`option "datalake.enabled": invalid value "yes": expected true or false`,
		`option "datalake.freshness": invalid value "-5s"`,
		`option "merge-engine": invalid value "newest": expected one of last_row, first_row, versioned`,
		`option "bucket.key": invalid value " , ": expected comma-separated column names`,
		`option "merge-engine.versioned.ver-column": invalid value " ": expected a column name`,
		`option "bucket.replicas": invalid value "17": expected an integer from 1 to 16`,
		`option "min.insync.replicas": invalid value "0": expected an integer from 1 to 16`,
	} {
		if !strings.Contains(err.Error()+"\n", want) {
			t.Errorf("error does not contain %q; got:\n%v", want, err)
		}
	}
	if n := strings.Count(err.Error(), "\n") + 1; n != 14 {
		t.Errorf("got %d problems, want 14:\n%v", n, err)
	}
}

func TestParseDuration(t *testing.T) {
	good := map[string]time.Duration{
		"7d": 7 * 24 * time.Hour, "12h": 12 * time.Hour, "30s": 30 * time.Second,
		"1h30m": 90 * time.Minute, "1d12h": 36 * time.Hour, "500ms": 500 * time.Millisecond,
		" 1.5d ": 36 * time.Hour,
	}
	for in, want := range good {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "7", "d", "0s", "-1h", "1x", "1h 30m", "7days", "1e3d", "99999999999d"} {
		if got, err := ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q) = %v, want error", in, got)
		}
	}
}

func TestParseSize(t *testing.T) {
	good := map[string]int64{
		"1048576": 1 << 20, "256MiB": 256 << 20, "256mib": 256 << 20, "1GB": 1e9, "1 GiB": 1 << 30,
		"64k": 64 << 10, "10b": 10, "1.5KiB": 1536, "2TB": 2e12,
	}
	for in, want := range good {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "-1", "1.5", "12 parsecs", "1e9", "99999999999TiB"} {
		if got, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %v, want error", in, got)
		}
	}
}

func TestSuggest(t *testing.T) {
	names := []string{"bucket.num", "bucket.key", "log.retention"}
	for in, want := range map[string]string{
		"bucket.nun": "bucket.num", "bucket.kye": "bucket.key", "log.retension": "log.retention",
		"retention": "log.retention", "zzz": "", "compression": "",
	} {
		if got := suggest(in, names); got != want {
			t.Errorf("suggest(%q) = %q, want %q", in, got, want)
		}
	}
}
