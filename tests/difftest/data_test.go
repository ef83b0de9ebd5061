package difftest

import (
	"fmt"
	"math"
	"math/big"
	mrand "math/rand"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// The generated data set. Rows are Go values, one per column, typed by the
// column's Arrow type (loaders in load_test.go):
//
//	BOOLEAN bool · TINYINT int8 · SMALLINT int16 · INTEGER int32 ·
//	BIGINT int64 · FLOAT float32 · DOUBLE float64 · DECIMAL decimal128.Num
//	(unscaled) · VARCHAR string · BLOB []byte · DATE int32 (days) · TIME,
//	TIMESTAMP, TIMESTAMPTZ int64 (µs) · LIST []any · STRUCT []any (fields) ·
//	MAP []kv · NULL nil
//
// Everything derives from one seed, so a failure reproduces exactly.

const seed = 20250301

// tableSpec is one table of the data set.
type tableSpec struct {
	db   string // "" is the default database
	name string
	cols []colSpec
	// with is Lakestream's WITH clause; the reference ignores it.
	with string
	rows [][]any
	// chunks, when set, are the row counts of the table's writes, in
	// order, instead of the cycle of chunkSizes (load_test.go).
	chunks []int
	// minChunk is the least row count of a write.
	minChunk int
	// addColumnAt > 0 creates the table without its last column, writes
	// the first addColumnAt rows, then adds the column with ALTER TABLE
	// and writes the rest: older batches read the new column as NULL.
	addColumnAt int
	// key, when set, is the primary key, and partitionedBy the PARTITIONED
	// BY list (pkdata_test.go); the reference declares neither.
	key           []string
	partitionedBy string
}

type colSpec struct {
	name    string
	typ     string // the same spelling for Lakestream and DuckDB
	notNull bool
}

type kv struct{ k, v any }

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// ref is the table's name in SQL, quoted.
func (t *tableSpec) ref() string {
	if t.db == "" {
		return quoteIdent(t.name)
	}
	return quoteIdent(t.db) + "." + quoteIdent(t.name)
}

// ddl is the CREATE TABLE statement; lake adds the primary key, the
// partitioning and the WITH clause. Column names
// are always quoted, so "Mixed Case" and "select" go through quoted DDL.
func (t *tableSpec) ddl(lake bool) string {
	var cols []string
	for _, c := range t.cols {
		s := quoteIdent(c.name) + " " + c.typ
		if c.notNull {
			s += " NOT NULL"
		}
		cols = append(cols, s)
	}
	if lake && len(t.key) > 0 {
		key := make([]string, len(t.key))
		for i, k := range t.key {
			key[i] = quoteIdent(k)
		}
		cols = append(cols, "PRIMARY KEY ("+strings.Join(key, ", ")+")")
	}
	sql := fmt.Sprintf("CREATE TABLE %s (%s)", t.ref(), strings.Join(cols, ", "))
	if lake && t.partitionedBy != "" {
		sql += " PARTITIONED BY (" + t.partitionedBy + ")"
	}
	if lake && t.with != "" {
		sql += " WITH (" + t.with + ")"
	}
	return sql
}

// gen draws the data set's values.
type gen struct{ r *rand.Rand }

func newGen() *gen { return &gen{rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))} }

// null reports true with probability p.
func (g *gen) null(p float64) bool { return g.r.Float64() < p }

func (g *gen) pick(s []string) string { return s[g.r.IntN(len(s))] }

var epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

const usPerDay = 86_400_000_000

// dataset returns every table of the data set.
func dataset() []*tableSpec {
	g := newGen()
	return []*tableSpec{
		g.customers(550),
		g.orders(5000),
		g.events(20000),
		g.profiles(300),
		targets(),
		edgeLists(),
		g.evolving(400, 150),
		g.otherCustomers(40),
		sparse(),
		{name: "empty_table", with: "'bucket.num'='2', 'bucket.key'='id'", cols: []colSpec{
			{"id", "BIGINT", true}, {"v", "VARCHAR", false}, {"d", "DECIMAL(9,3)", false}}},
	}
}

var (
	names = []string{
		"Alice", "Bob", "Zoë", "Łukasz Żółć", "山田太郎", "Ålborg Åsa", "Мария Иванова", "محمد علي",
		"😀 Smiley", "O'Brien", "a", "", "Renée-Noëlle Dupont-Aignan", "ß", "İstanbul Ïnez", "Carol",
		"dave", "Eve_", "100% real", "Ünal",
	}
	regions  = []string{"EU", "US", "APAC", "LATAM"}
	statuses = []string{"new", "paid", "shipped", "cancelled", "returned"}
	// odd statuses: mixed case, empty, quotes, LIKE metacharacters, and
	// the 12/13-byte boundary of DuckDB's inlined strings.
	odd     = []string{"Shipped", "", "it's done", "50% off", "under_score", "naïve", "PAID", "twelve-bytes", "thirteen-byte"}
	tagPool = []string{"gift", "priority", "bulk", "fragile", "eco", "vip", "sale", "b2b", "ünïcödé", "日本", "a-very-long-tag-name"}
	kinds   = []string{"view", "click", "cart", "buy", "refund"}
)

func (g *gen) customers(n int) *tableSpec {
	t := &tableSpec{name: "customers", with: "'bucket.num'='3', 'bucket.key'='id'", cols: []colSpec{
		{"id", "BIGINT", true}, {"name", "VARCHAR", false}, {"region", "VARCHAR", false},
		{"signup", "DATE", false}, {"score", "DECIMAL(4,1)", false}, {"credit", "DECIMAL(30,6)", false},
	}}
	for i := range n {
		row := []any{int64(i + 1), nil, nil, nil, nil, nil}
		if !g.null(0.05) {
			row[1] = g.pick(names)
			if g.r.IntN(3) == 0 {
				row[1] = fmt.Sprintf("%s %d", row[1], g.r.IntN(50))
			}
		}
		if !g.null(0.06) {
			row[2] = g.pick(regions)
		}
		if !g.null(0.03) {
			row[3] = int32(epoch.Unix()/86400) - int32(g.r.IntN(1500))
		}
		if !g.null(0.05) {
			row[4] = decimal128.FromI64(int64(g.r.IntN(11000) - 1000))
		}
		if !g.null(0.05) {
			// Up to ±10^24 units of 10^-6: beyond int64, so the upper
			// 64 bits of the decimal128 are exercised, signs included.
			v := new(big.Int).Rand(mrand.New(randSource{g.r}), new(big.Int).Exp(big.NewInt(10), big.NewInt(24), nil))
			if g.r.IntN(4) == 0 {
				v.Neg(v)
			}
			row[5] = decimal128.FromBigInt(v)
		}
		t.rows = append(t.rows, row)
	}
	return t
}

// randSource adapts math/rand/v2 to the math/rand source big.Int.Rand
// takes.
type randSource struct{ r *rand.Rand }

func (s randSource) Int63() int64   { return int64(s.r.Uint64() >> 1) }
func (s randSource) Uint64() uint64 { return s.r.Uint64() }
func (s randSource) Seed(int64)     {}

func (g *gen) orders(n int) *tableSpec {
	t := &tableSpec{name: "orders", with: "'bucket.num'='3', 'bucket.key'='id'", cols: []colSpec{
		{"id", "BIGINT", true}, {"customer_id", "BIGINT", false}, {"amount", "DECIMAL(12,2)", false},
		{"status", "VARCHAR", false}, {"created", "TIMESTAMPTZ", false}, {"day", "DATE", false},
		{"qty", "INTEGER", false}, {"discount", "DOUBLE", false}, {"tags", "VARCHAR[]", false},
		{"flag", "BOOLEAN", false},
	}}
	for i := range n {
		row := make([]any, len(t.cols))
		row[0] = int64(i + 1)
		if !g.null(0.03) {
			row[1] = int64(g.r.IntN(600) + 1) // 551..600 have no customer
		}
		if !g.null(0.05) {
			row[2] = decimal128.FromI64(int64(g.r.IntN(10_000_000) - 50_000))
		}
		switch {
		case g.null(0.04):
		case g.null(0.03):
			row[3] = g.pick(odd)
		default:
			row[3] = g.pick(statuses)
		}
		var created int64
		if !g.null(0.03) {
			created = epoch.UnixMicro() + g.r.Int64N(730*usPerDay)
			if g.null(0.01) {
				// Before 1970: negative microseconds.
				created = time.Date(1969, 12, 31, 23, 59, 59, 500_000_000, time.UTC).UnixMicro() - g.r.Int64N(20000*usPerDay)
			}
			row[4] = created
			if !g.null(0.02) {
				row[5] = int32(math.Floor(float64(created) / usPerDay))
			}
		}
		if !g.null(0.05) {
			row[6] = int32(g.r.IntN(60) - 5)
		}
		switch {
		case g.null(0.10):
		case g.null(0.02):
			row[7] = math.Copysign(0, -1)
		case g.null(0.05):
			row[7] = 0.25
		default:
			row[7] = g.r.Float64() * 0.5
		}
		switch {
		case g.null(0.15):
		case g.null(0.10):
			row[8] = []any{}
		default:
			tags := make([]any, 1+g.r.IntN(4))
			for j := range tags {
				if !g.null(0.05) {
					tags[j] = g.pick(tagPool)
				}
			}
			row[8] = tags
		}
		if !g.null(0.05) {
			row[9] = g.r.IntN(2) == 0
		}
		t.rows = append(t.rows, row)
	}
	return t
}

func (g *gen) events(n int) *tableSpec {
	t := &tableSpec{name: "events", with: "'bucket.num'='3', 'bucket.key'='id'", cols: []colSpec{
		{"id", "BIGINT", true}, {"order_id", "BIGINT", false}, {"kind", "VARCHAR", false},
		{"ts", "TIMESTAMP", false}, {"value", "DOUBLE", false}, {"seq", "SMALLINT", false},
		{"small", "TINYINT", false}, {"ratio", "FLOAT", false}, {"t", "TIME", false},
		{"payload", "BLOB", false},
	}}
	for i := range n {
		row := make([]any, len(t.cols))
		row[0] = int64(i + 1)
		if !g.null(0.02) {
			row[1] = int64(g.r.IntN(5200) + 1)
		}
		if !g.null(0.01) {
			row[2] = g.pick(kinds)
		}
		if !g.null(0.01) {
			row[3] = epoch.UnixMicro() + g.r.Int64N(365*usPerDay)
		}
		if !g.null(0.03) {
			if g.r.IntN(10) == 0 {
				row[4] = float64(g.r.IntN(100))
			} else {
				row[4] = g.r.NormFloat64() * 100
			}
		}
		if !g.null(0.02) {
			row[5] = int16(g.r.IntN(65536) - 32768)
		}
		if !g.null(0.02) {
			row[6] = int8(g.r.IntN(256) - 128)
		}
		if !g.null(0.02) {
			row[7] = float32(g.r.Float64())
		}
		if !g.null(0.02) {
			row[8] = g.r.Int64N(usPerDay)
		}
		if !g.null(0.30) {
			b := make([]byte, g.r.IntN(25))
			for j := range b {
				b[j] = byte(g.r.IntN(256))
			}
			row[9] = b
		}
		t.rows = append(t.rows, row)
	}
	// Special floats, at fixed ids.
	t.rows[776][7] = float32(math.NaN())
	t.rows[777][7] = float32(math.Inf(1))
	t.rows[778][7] = float32(math.Inf(-1))
	return t
}

// profiles lives in a second database, spreads its batches round-robin
// (no bucket key), and has the nested types and quoted column names.
//
// Its writes have at least 50 rows, so that every stored batch holds some
// list elements and map entries: a batch whose lists of fixed-width values
// are all empty or NULL crashes the engine (see edgeLists), and would take
// the whole corpus down with it.
func (g *gen) profiles(n int) *tableSpec {
	t := &tableSpec{db: "analytics", name: "profiles", with: "'bucket.num'='2'", minChunk: 50, cols: []colSpec{
		{"id", "BIGINT", true}, {"customer_id", "BIGINT", false}, {"Mixed Case", "VARCHAR", false},
		{"select", "INTEGER", false}, {"attrs", "STRUCT(k VARCHAR, n INTEGER)", false},
		{"prefs", "MAP(VARCHAR, INTEGER)", false}, {"scores", "DOUBLE[]", false},
		{"matrix", "INTEGER[][]", false},
	}}
	keys := []string{"color", "size", "lang", "theme", "tz"}
	for i := range n {
		row := make([]any, len(t.cols))
		row[0] = int64(i + 1)
		if !g.null(0.1) {
			row[1] = int64(g.r.IntN(600) + 1)
		}
		if !g.null(0.1) {
			row[2] = g.pick(names) + strings.Repeat("!", g.r.IntN(3))
		}
		if !g.null(0.1) {
			row[3] = int32(g.r.IntN(100))
		}
		if !g.null(0.1) {
			var k, n any
			if !g.null(0.1) {
				k = g.pick(keys)
			}
			if !g.null(0.1) {
				n = int32(g.r.IntN(1000) - 500)
			}
			row[4] = []any{k, n}
		}
		if !g.null(0.1) {
			var m []kv
			for _, j := range g.r.Perm(len(keys))[:g.r.IntN(4)] {
				var v any
				if !g.null(0.1) {
					v = int32(g.r.IntN(10))
				}
				m = append(m, kv{keys[j], v})
			}
			row[5] = m
		}
		if !g.null(0.1) {
			s := make([]any, g.r.IntN(5))
			for j := range s {
				if !g.null(0.1) {
					s[j] = math.Round(g.r.Float64()*1000) / 8
				}
			}
			row[6] = s
		}
		if !g.null(0.1) {
			mx := make([]any, g.r.IntN(3))
			for j := range mx {
				if g.null(0.1) {
					continue
				}
				inner := make([]any, g.r.IntN(4))
				for k := range inner {
					inner[k] = int32(g.r.IntN(10))
				}
				mx[j] = inner
			}
			row[7] = mx
		}
		t.rows = append(t.rows, row)
	}
	return t
}

// targets is a small table with a quoted, mixed-case name and column.
func targets() *tableSpec {
	t := &tableSpec{name: "Region Targets", with: "'bucket.num'='1'", cols: []colSpec{
		{"region", "VARCHAR", false}, {"Quarter", "INTEGER", false}, {"target", "DECIMAL(10,2)", false},
	}}
	for i, r := range slices.Concat(regions, []string{"MARS"}) {
		for q := int32(1); q <= 4; q++ {
			t.rows = append(t.rows, []any{r, q, decimal128.FromI64(int64(1_000_000*(i+1) + 12_345*int(q)))})
		}
	}
	t.rows = append(t.rows, []any{nil, int32(1), nil})
	return t
}

// edgeLists holds lists and maps written so that whole batches have no
// elements at all (every list empty or NULL), next to batches that do. One
// write per batch: one bucket, explicit chunk sizes.
//
// Known bug (corpus: edge_lists_*): scanning a batch whose list column of a
// fixed-width type (INTEGER[], DOUBLE[], BOOLEAN[], MAP values ...) has no
// elements dereferences the nil value buffer of the empty child array in
// planner/duck/vectors.go (nestedListWriter calls the child writer with
// n = 0; fixedWriter and writeBool read Buffers()[1].Bytes()), and the panic
// in the cgo callback kills the process.
func edgeLists() *tableSpec {
	t := &tableSpec{name: "edge_lists", with: "'bucket.num'='1'", chunks: []int{2, 3, 1, 2}, cols: []colSpec{
		{"id", "BIGINT", true}, {"ints", "INTEGER[]", false}, {"dbls", "DOUBLE[]", false},
		{"flags", "BOOLEAN[]", false}, {"m", "MAP(VARCHAR, INTEGER)", false}, {"strs", "VARCHAR[]", false},
	}}
	t.rows = [][]any{
		// batch 1: no elements anywhere
		{int64(1), []any{}, []any{}, []any{}, []kv{}, []any{}},
		{int64(2), nil, nil, nil, nil, nil},
		// batch 2: elements, NULL elements, empty lists
		{int64(3), []any{int32(1), nil, int32(3)}, []any{1.5, nil}, []any{true, false, nil}, []kv{{"a", int32(1)}, {"b", nil}}, []any{"x", nil, "long string value here"}},
		{int64(4), []any{}, []any{-0.25}, []any{}, []kv{}, []any{}},
		{int64(5), []any{int32(-7)}, nil, []any{true}, []kv{{"c", int32(3)}}, []any{""}},
		// batch 3: one NULL row
		{int64(6), nil, nil, nil, nil, nil},
		// batch 4: one element each after an empty row
		{int64(7), []any{}, []any{}, []any{}, []kv{}, []any{}},
		{int64(8), []any{int32(8)}, []any{8.0}, []any{false}, []kv{{"h", int32(8)}}, []any{"eight"}},
	}
	return t
}

// evolving gains its last column (b) after `at` rows were written.
func (g *gen) evolving(n, at int) *tableSpec {
	t := &tableSpec{name: "evolving", with: "'bucket.num'='2', 'bucket.key'='id'", addColumnAt: at, cols: []colSpec{
		{"id", "BIGINT", true}, {"a", "VARCHAR", false}, {"b", "DOUBLE", false},
	}}
	for i := range n {
		row := []any{int64(i + 1), nil, nil}
		if !g.null(0.1) {
			row[1] = g.pick(statuses)
		}
		if i >= at && !g.null(0.1) {
			row[2] = float64(g.r.IntN(1000)) / 4
		}
		t.rows = append(t.rows, row)
	}
	return t
}

// sparse has four buckets and two rows: most buckets are empty.
func sparse() *tableSpec {
	return &tableSpec{name: "sparse", with: "'bucket.num'='4', 'bucket.key'='id'", cols: []colSpec{
		{"id", "BIGINT", true}, {"v", "VARCHAR", false},
	}, rows: [][]any{{int64(7), "seven"}, {int64(1000000007), nil}}}
}

// otherCustomers is analytics.customers: the name of a default-database
// table, in another database, with other rows, so that resolving a name to
// the wrong database shows.
func (g *gen) otherCustomers(n int) *tableSpec {
	t := g.customers(n)
	t.db, t.with = "analytics", "'bucket.num'='2', 'bucket.key'='id'"
	for _, r := range t.rows {
		r[0] = r[0].(int64) * 7
	}
	return t
}
