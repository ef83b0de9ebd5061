package merge

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/cockroachdb/datadriven"

	"github.com/lakestream/lakestream/internal/rowenc"
)

// TestEngines runs the scripts of testdata/: each defines a table
// ("table engine=... [version=col]" with one column a line: name type
// [key] [notnull] [agg=fn] [delim=d]) and then writes to one key:
// "upsert" with the values of a row ("_" for a column not carried, NULL
// for null) or "delete", printing the change the write makes.
func TestEngines(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var e *Engine
		var cols []Column
		var cur []rowenc.Value
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "table":
				cols = parseColumns(t, d.Input)
				kind, ver := "", ""
				d.MaybeScanArgs(t, "engine", &kind)
				d.MaybeScanArgs(t, "version", &ver)
				vi := -1
				for i, c := range cols {
					if c.Name == ver {
						vi = i
					}
				}
				var err error
				if e, err = New(Kind(kind), cols, vi); err != nil {
					return "error: " + err.Error()
				}
				cur = nil
				return "ok"
			case "upsert":
				in, present := parseRow(t, cols, d.Input)
				if err := e.CheckPresent(present); err != nil {
					return "error: " + err.Error()
				}
				out, changed, err := e.Upsert(cur, in, present)
				if err != nil {
					return "error: " + err.Error()
				}
				if !changed {
					return "no change"
				}
				var b strings.Builder
				if cur == nil {
					fmt.Fprintf(&b, "+I %s", render(cols, out))
				} else {
					fmt.Fprintf(&b, "-U %s\n+U %s", render(cols, cur), render(cols, out))
				}
				cur = out
				return b.String()
			case "delete":
				if cur == nil {
					return "no change"
				}
				s := "-D " + render(cols, cur)
				cur = nil
				return s
			}
			t.Fatalf("unknown command %q", d.Cmd)
			return ""
		})
	})
}

var typeNames = map[string]arrow.DataType{
	"TINYINT": arrow.PrimitiveTypes.Int8, "SMALLINT": arrow.PrimitiveTypes.Int16,
	"INTEGER": arrow.PrimitiveTypes.Int32, "BIGINT": arrow.PrimitiveTypes.Int64,
	"DOUBLE": arrow.PrimitiveTypes.Float64, "FLOAT": arrow.PrimitiveTypes.Float32,
	"VARCHAR": arrow.BinaryTypes.String, "BOOLEAN": arrow.FixedWidthTypes.Boolean,
	"DECIMAL":   &arrow.Decimal128Type{Precision: 4, Scale: 1},
	"TIMESTAMP": &arrow.TimestampType{Unit: arrow.Microsecond},
}

func parseColumns(t *testing.T, input string) []Column {
	var cols []Column
	for _, line := range strings.Split(strings.TrimSpace(input), "\n") {
		f := strings.Fields(line)
		dt, ok := typeNames[f[1]]
		if !ok {
			t.Fatalf("unknown type %q", f[1])
		}
		c := Column{Name: f[0], Type: dt}
		for _, a := range f[2:] {
			switch {
			case a == "key":
				c.Key, c.NotNull = true, true
			case a == "notnull":
				c.NotNull = true
			case strings.HasPrefix(a, "agg="):
				c.Agg = Func(strings.TrimPrefix(a, "agg="))
			case strings.HasPrefix(a, "delim="):
				c.Delimiter = strings.TrimPrefix(a, "delim=")
			default:
				t.Fatalf("unknown column attribute %q", a)
			}
		}
		cols = append(cols, c)
	}
	return cols
}

func parseRow(t *testing.T, cols []Column, input string) ([]rowenc.Value, []bool) {
	f := strings.Fields(input)
	if len(f) != len(cols) {
		t.Fatalf("row %q: %d values for %d columns", input, len(f), len(cols))
	}
	vals := make([]rowenc.Value, len(cols))
	present := make([]bool, len(cols))
	for i, s := range f {
		switch s {
		case "_":
			vals[i] = rowenc.Null
			continue
		case "NULL":
			vals[i], present[i] = rowenc.Null, true
			continue
		}
		present[i] = true
		vals[i] = rowenc.Value{Raw: parseValue(t, cols[i].Type, s)}
	}
	return vals, present
}

func parseValue(t *testing.T, dt arrow.DataType, s string) []byte {
	switch dt.ID() {
	case arrow.STRING:
		return []byte(s)
	case arrow.BOOL:
		return rowenc.FromBool(s == "true")
	case arrow.FLOAT32, arrow.FLOAT64:
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatal(err)
		}
		return rowenc.FromFloat(x, dt.(arrow.FixedWidthDataType).Bytes())
	case arrow.DECIMAL128:
		n, err := decimal128.FromString(s, 4, 1)
		if err != nil {
			t.Fatal(err)
		}
		return rowenc.FromDecimal(n)
	}
	x, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return rowenc.FromInt(x, dt.(arrow.FixedWidthDataType).Bytes())
}

func render(cols []Column, vals []rowenc.Value) string {
	out := make([]string, len(vals))
	for i, v := range vals {
		dt := cols[i].Type
		switch {
		case v.Null:
			out[i] = "NULL"
		case dt.ID() == arrow.STRING:
			out[i] = string(v.Raw)
		case dt.ID() == arrow.BOOL:
			out[i] = strconv.FormatBool(rowenc.Bool(v.Raw))
		case dt.ID() == arrow.FLOAT32 || dt.ID() == arrow.FLOAT64:
			out[i] = strconv.FormatFloat(rowenc.Float(v.Raw), 'g', -1, 64)
		case dt.ID() == arrow.DECIMAL128:
			out[i] = rowenc.Decimal(v.Raw).ToString(1)
		default:
			out[i] = strconv.FormatInt(rowenc.Int(v.Raw), 10)
		}
	}
	return strings.Join(out, " ")
}
