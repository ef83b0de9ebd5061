package difftest

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/lakestream/lakestream/tables"
)

// The primary-key data set (pklake_test.go): the data set's tables declared
// with a primary key, each loaded by a scripted workload of upserts,
// partial updates, overwrites (what SQL UPDATE writes), deletes and an ADD
// COLUMN, in three phases with a tiering round after the first two. A
// model (pkModel) applies the same operations with the merge engines'
// semantics (docs/sql.md, "Primary-key tables"); the reference is loaded
// with the model's final state, one row per live key.
//
// The workloads are written so that the final state is the data set's
// rows (so that the corpus's queries find the rows they look for), through
// rows that are not: every key first gets a stale row (another row's
// values), extra keys are inserted and deleted again, keys are deleted and
// inserted anew. Whether the state really is the data set's rows is the
// model's business, not the test's: the reference is what the model says.

// pkPhases is the number of write phases; a round tiers the state after
// each phase but the last, whose writes stay in the log tail.
const pkPhases = 3

// engine names a merge engine of pkTable.
type engine string

const (
	lastRow     engine = "last_row"
	firstRow    engine = "first_row"
	aggregation engine = "aggregation"
)

// pkTable is a table of the primary-key data set: its spec (key and
// partitioning in it), its merge engine, and the operations of each phase.
type pkTable struct {
	spec   *tableSpec
	engine engine
	// aggs are the aggregation functions by column index (aggregation).
	aggs map[int]string
	// target is the rows the workload leads to.
	target [][]any
	ops    [pkPhases][]pkOp
}

// opKind is what a pkOp writes.
type opKind int

const (
	opUpsert    opKind = iota // Table.Write: an upsert through the merge engine
	opDelete                  // Table.Delete of the rows' keys
	opOverwrite               // Table.Overwrite: whole rows, no merge engine
	opAddColumn               // ALTER TABLE ADD COLUMN of the spec's last column
)

// pkOp is one operation of a workload. rows are full rows of the spec's
// columns; cols, for an upsert, are the columns it carries (nil: every
// column of the table's current schema).
type pkOp struct {
	kind opKind
	cols []string
	rows [][]any
}

func (k opKind) String() string {
	return [...]string{"upsert", "delete", "overwrite", "add column"}[k]
}

// pkDataset is the primary-key data set, and the log tables that go with
// it ("Region Targets" has a NULL region: no key fits it).
func pkDataset() (pks []*pkTable, logs []*tableSpec) {
	byName := map[string]*tableSpec{}
	for _, t := range dataset() {
		byName[t.db+"."+t.name] = t
	}
	keyed := func(name, with string, key ...string) *tableSpec {
		t := byName[name]
		t.key = key
		t.with = with
		for i := range t.cols {
			if slices.Contains(key, t.cols[i].name) {
				t.cols[i].notNull = true
			}
		}
		return t
	}
	const opts = ", 'log.retention'='1ms'" // every tiered file may be compacted
	orders := keyed(".orders", "'bucket.num'='3', 'bucket.key'='id'"+opts, "id", "day")
	orders.partitionedBy = "year(day)"
	fillDays(orders)
	customers := keyed(".customers", "'bucket.num'='3', 'merge-engine'='aggregation', 'fields.name.agg'='last_value', "+
		"'fields.region.agg'='first_value', 'fields.signup.agg'='min', 'fields.score.agg'='sum', 'fields.credit.agg'='max'"+opts, "id")
	pks = []*pkTable{
		newPKTable(orders, lastRow),
		newPKTable(customers, aggregation),
		newPKTable(keyed(".events", "'bucket.num'='3'"+opts, "id"), lastRow),
		newPKTable(keyed("analytics.profiles", "'bucket.num'='2'"+opts, "id"), lastRow),
		newPKTable(keyed("analytics.customers", "'bucket.num'='2', 'merge-engine'='first_row'"+opts, "id"), firstRow),
		newPKTable(keyed(".edge_lists", "'bucket.num'='1'"+opts, "id"), lastRow),
		newPKTable(keyed(".evolving", "'bucket.num'='2'"+opts, "id"), lastRow),
		newPKTable(keyed(".sparse", "'bucket.num'='4'"+opts, "id"), lastRow),
		newPKTable(keyed(".empty_table", "'bucket.num'='2'"+opts, "id"), lastRow),
	}
	pks[1].aggs = map[int]string{1: "last_value", 2: "first_value", 3: "min", 4: "sum", 5: "max"}
	for _, p := range pks {
		p.script()
	}
	return pks, []*tableSpec{byName[".Region Targets"]}
}

// fillDays gives the orders whose day is NULL one: day is a key column.
func fillDays(t *tableSpec) {
	for i, r := range t.rows {
		if r[5] == nil {
			r[5] = int32(19700 + i%500)
		}
	}
}

func newPKTable(spec *tableSpec, e engine) *pkTable {
	p := &pkTable{spec: spec, engine: e, target: spec.rows}
	spec.rows = nil // the model's final state, once applied
	return p
}

// keyCols are the indexes of the key columns.
func (p *pkTable) keyCols() []int {
	var out []int
	for i, c := range p.spec.cols {
		if slices.Contains(p.spec.key, c.name) {
			out = append(out, i)
		}
	}
	return out
}

// stale is row i with its key and the other columns of another row.
func (p *pkTable) stale(i int) []any {
	n := len(p.target)
	row := slices.Clone(p.target[(i*7+3)%n])
	for _, k := range p.keyCols() {
		row[k] = p.target[i][k]
	}
	return row
}

// extra is a key the data set does not have, with row i's values: the
// workloads insert such keys and delete them again.
func (p *pkTable) extra(i int) []any {
	row := p.stale(i)
	row[0] = row[0].(int64) + 1_000_000_000
	return row
}

// colNames are the names of the columns at idx.
func (p *pkTable) colNames(idx []int) []string {
	out := make([]string, len(idx))
	for i, c := range idx {
		out[i] = p.spec.cols[c].name
	}
	return out
}

// script writes the table's workload.
func (p *pkTable) script() {
	switch {
	case len(p.target) == 0:
		p.scriptEmpty()
	case p.engine == aggregation:
		p.scriptAggregation()
	case p.engine == firstRow:
		p.scriptFirstRow()
	default:
		p.scriptLastRow()
	}
	if p.spec.addColumnAt > 0 {
		// The column comes in the second phase: the first round's files
		// lack it.
		p.ops[1] = append([]pkOp{{kind: opAddColumn}}, p.ops[1]...)
	}
}

// add appends rows to the last op of phase ph when it is of the same kind
// and columns, else a new op.
func (p *pkTable) add(ph int, kind opKind, cols []string, rows ...[]any) {
	ops := p.ops[ph]
	if n := len(ops); n > 0 && ops[n-1].kind == kind && slices.Equal(ops[n-1].cols, cols) {
		ops[n-1].rows = append(ops[n-1].rows, rows...)
		return
	}
	p.ops[ph] = append(ops, pkOp{kind: kind, cols: cols, rows: rows})
}

// firstCols is the columns before the ADD COLUMN, for a table that adds
// one: the first phase's writes cannot carry it.
func (p *pkTable) firstCols() []string {
	if p.spec.addColumnAt == 0 {
		return nil
	}
	all := make([]int, len(p.spec.cols)-1)
	for i := range all {
		all[i] = i
	}
	return p.colNames(all)
}

// skipped keys are written in the last phase only.
func skipped(i int) bool { return i%13 == 5 }

// reinserted keys of a last_row table are deleted in the second phase
// and inserted again with a stale row.
func reinserted(i int) bool { return i%10 == 2 && i%4 == 2 }

// scriptLastRow: stale rows and extra keys first; then the true rows of a
// quarter of the keys, half the columns of another quarter, deletes and
// inserts anew, deletes of half the extra keys; in the tail the other half
// of the columns (a partial update of rows in the lake), the true rows by
// upsert and by overwrite, deletes of lake keys and inserts anew, and the
// deletes of the other extra keys.
func (p *pkTable) scriptLastRow() {
	first := p.firstCols()
	var nonKey []int
	for i := range p.spec.cols {
		if !slices.Contains(p.keyCols(), i) {
			nonKey = append(nonKey, i)
		}
	}
	half := len(nonKey) / 2
	colsA := p.colNames(append(p.keyCols(), nonKey[:half]...))
	colsB := p.colNames(append(p.keyCols(), nonKey[half:]...))
	for i, row := range p.target {
		if skipped(i) {
			p.add(2, opUpsert, nil, row)
			continue
		}
		p.add(0, opUpsert, first, p.stale(i))
		if i%5 == 0 {
			p.add(0, opUpsert, first, p.extra(i))
		}
	}
	for i, row := range p.target {
		switch {
		case skipped(i):
		case i%4 == 0:
			p.add(1, opUpsert, nil, row)
		case i%4 == 1 && half > 0:
			p.add(1, opUpsert, colsA, row)
		case reinserted(i):
			p.add(1, opDelete, nil, row)
		}
		if i%10 == 0 && !skipped(i) {
			p.add(1, opDelete, nil, p.extra(i))
		}
	}
	for i := range p.target {
		if !skipped(i) && reinserted(i) {
			p.add(1, opUpsert, nil, p.stale(i)) // the deleted key again
		}
	}
	for i, row := range p.target {
		switch {
		case skipped(i):
		case i%4 == 1 && half > 0:
			p.add(2, opUpsert, colsB, row)
		case i%8 == 4:
			p.add(2, opDelete, nil, row)
		case i%4 == 2 || i%4 == 1:
			p.add(2, opUpsert, nil, row)
		case i%4 == 3:
			p.add(2, opOverwrite, nil, row)
		}
		if i%5 == 0 && i%10 != 0 && !skipped(i) {
			p.add(2, opDelete, nil, p.extra(i))
		}
	}
	for i, row := range p.target {
		if !skipped(i) && i%8 == 4 {
			p.add(2, opUpsert, nil, row) // a lake key deleted in the tail, inserted again
		}
	}
}

// scriptFirstRow: the true rows first, which later upserts do not change;
// deletes, after which the next row (a stale one) is the key's; overwrites
// of stale rows and back.
func (p *pkTable) scriptFirstRow() {
	for i, row := range p.target {
		if skipped(i) {
			p.add(2, opUpsert, nil, row)
			continue
		}
		p.add(0, opUpsert, nil, row)
		if i%5 == 0 {
			p.add(0, opUpsert, nil, p.extra(i))
		}
	}
	for i := range p.target {
		switch {
		case skipped(i):
		case i%4 == 0:
			p.add(1, opUpsert, nil, p.stale(i)) // first row stays
		case i%4 == 3:
			p.add(1, opOverwrite, nil, p.stale(i))
		case i%10 == 2:
			p.add(1, opDelete, nil, p.stale(i))
		}
	}
	for i := range p.target {
		if !skipped(i) && i%10 == 2 {
			p.add(1, opUpsert, nil, p.stale(i)) // the deleted key takes it
		}
	}
	for i, row := range p.target {
		switch {
		case skipped(i):
		case i%4 == 3:
			p.add(2, opOverwrite, nil, row)
		case i%10 == 2:
			p.add(2, opDelete, nil, row)
		default:
			p.add(2, opUpsert, nil, p.stale(i)) // changes nothing
		}
		if i%5 == 0 && !skipped(i) {
			p.add(2, opDelete, nil, p.extra(i))
		}
	}
	for i, row := range p.target {
		if !skipped(i) && i%10 == 2 {
			p.add(2, opUpsert, nil, row)
		}
	}
}

// scriptAggregation is for customers (aggs in pkDataset): each column's
// true value is reached through its function — name (last_value) is
// written last, region (first_value) first, signup (min) after a later
// date, score (sum) in parts, the second a partial update, credit (max)
// after a smaller value.
func (p *pkTable) scriptAggregation() {
	const day = 30
	minus := func(v any, units int64) any {
		if v == nil {
			return nil
		}
		return v.(decimal128.Num).Sub(decimal128.FromI64(units))
	}
	part := func(v any, units int64) any {
		if v == nil {
			return nil
		}
		return decimal128.FromI64(units)
	}
	first := func(i int) []any {
		t := p.target[i]
		row := []any{t[0], p.stale(i)[1], t[2], nil, minus(t[4], 50), minus(t[5], 1)}
		if t[3] != nil {
			row[3] = t[3].(int32) + day
		}
		return row
	}
	partial := func(i int) bool { return i%4 == 0 && i%10 != 2 }
	for i, row := range p.target {
		if skipped(i) {
			p.add(2, opUpsert, nil, row)
			continue
		}
		p.add(0, opUpsert, nil, first(i))
		if i%5 == 0 {
			p.add(0, opUpsert, nil, p.extra(i))
		}
	}
	for i, row := range p.target {
		switch {
		case skipped(i):
		case partial(i):
			p.add(1, opUpsert, []string{"id", "score"}, []any{row[0], nil, nil, nil, part(row[4], 20), nil})
		case i%10 == 2:
			p.add(1, opDelete, nil, row)
		}
	}
	for i := range p.target {
		if !skipped(i) && i%10 == 2 {
			p.add(1, opUpsert, nil, first(i)) // the deleted key starts over
		}
	}
	for i, row := range p.target {
		if skipped(i) {
			continue
		}
		if i%8 == 4 && !partial(i) {
			p.add(2, opDelete, nil, row)
			continue
		}
		last := []any{row[0], row[1], p.stale(i)[2], row[3], part(row[4], 50), row[5]}
		if partial(i) {
			last[4] = part(row[4], 30)
		}
		p.add(2, opUpsert, nil, last)
		if i%5 == 0 {
			p.add(2, opDelete, nil, p.extra(i))
		}
	}
	for i, row := range p.target {
		if !skipped(i) && i%8 == 4 && !partial(i) {
			p.add(2, opUpsert, nil, row) // a new key: its values as written
		}
	}
}

// scriptEmpty is for a table whose data set has no rows: keys are
// inserted, updated, tiered, and all deleted again, half of them in the
// tail.
func (p *pkTable) scriptEmpty() {
	row := func(id int64) []any {
		return []any{id, fmt.Sprintf("row %d", id), decimal128.FromI64(id * 1001)}
	}
	for id := range int64(40) {
		p.add(0, opUpsert, nil, row(id))
	}
	for id := range int64(40) {
		switch {
		case id%2 == 0:
			p.add(1, opDelete, nil, row(id))
		default:
			p.add(1, opUpsert, []string{"id", "v"}, row(id))
		}
	}
	for id := int64(1); id < 40; id += 2 {
		p.add(2, opDelete, nil, row(id))
	}
}

// pkModel is a primary-key table's rows by key, as the merge engine makes
// them.
type pkModel struct {
	t    *pkTable
	rows map[string][]any
	// width is the number of columns the table has now (an ADD COLUMN
	// adds one).
	width int
}

func newPKModel(t *pkTable) *pkModel {
	w := len(t.spec.cols)
	if t.spec.addColumnAt > 0 {
		w--
	}
	return &pkModel{t: t, rows: map[string][]any{}, width: w}
}

func (m *pkModel) key(row []any) string {
	var b strings.Builder
	for _, k := range m.t.keyCols() {
		fmt.Fprintf(&b, "%v\x00", row[k])
	}
	return b.String()
}

// apply applies op to the model, row by row in order.
func (m *pkModel) apply(op pkOp) {
	if op.kind == opAddColumn {
		m.width++
		return
	}
	present := make([]bool, len(m.t.spec.cols))
	for i, c := range m.t.spec.cols {
		present[i] = i < m.width && (op.cols == nil || slices.Contains(op.cols, c.name))
	}
	for _, in := range op.rows {
		k := m.key(in)
		old, ok := m.rows[k]
		switch {
		case op.kind == opDelete:
			delete(m.rows, k)
		case op.kind == opOverwrite:
			m.rows[k] = m.merge(nil, in, present)
		case !ok:
			m.rows[k] = m.merge(nil, in, present)
		case m.t.engine == firstRow:
		case m.t.engine == aggregation:
			m.rows[k] = m.aggregate(old, in, present)
		default:
			m.rows[k] = m.merge(old, in, present)
		}
	}
}

// merge is old (nil: a new key, all NULL) with the present columns of in.
func (m *pkModel) merge(old, in []any, present []bool) []any {
	out := make([]any, len(m.t.spec.cols))
	copy(out, old)
	for i, p := range present {
		if p {
			out[i] = in[i]
		}
	}
	return out
}

// aggregate folds in into old by the columns' functions; a NULL input
// leaves the value, but for last_value.
func (m *pkModel) aggregate(old, in []any, present []bool) []any {
	out := slices.Clone(old)
	for i, p := range present {
		f := m.t.aggs[i]
		switch {
		case !p || f == "" || f == "first_value":
		case f == "last_value":
			out[i] = in[i]
		case in[i] == nil:
		case old[i] == nil:
			out[i] = in[i]
		case f == "sum":
			out[i] = old[i].(decimal128.Num).Add(in[i].(decimal128.Num))
		case f == "min":
			if in[i].(int32) < old[i].(int32) {
				out[i] = in[i]
			}
		case f == "max":
			if in[i].(decimal128.Num).Greater(old[i].(decimal128.Num)) {
				out[i] = in[i]
			}
		default:
			panic("difftest: no model of aggregation " + f)
		}
	}
	return out
}

// state is the model's rows, ordered by key.
func (m *pkModel) state() [][]any {
	keys := make([]string, 0, len(m.rows))
	for k := range m.rows {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([][]any, len(keys))
	for i, k := range keys {
		out[i] = m.rows[k]
	}
	return out
}

// writePK writes op to tbl in writes of varied size, and applies each
// write to the model as it goes.
func writePK(ctx context.Context, store *tables.Store, tbl *tables.Table, m *pkModel, op pkOp) error {
	spec := m.t.spec
	if op.kind == opAddColumn {
		last := spec.cols[len(spec.cols)-1]
		m.apply(op)
		return execDDL(ctx, store, fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s %s", spec.ref(), quoteIdent(last.name), last.typ))
	}
	cols := op.cols
	switch op.kind {
	case opDelete:
		cols = m.t.colNames(m.t.keyCols())
	case opUpsert, opOverwrite:
		if cols == nil {
			cols = m.t.colNames(seq(m.width))
		}
	}
	schema, idx, err := project(tbl.Schema(), spec, cols)
	if err != nil {
		return err
	}
	for i, start := 0, 0; start < len(op.rows); i++ {
		end := min(len(op.rows), start+chunkSizes[i%len(chunkSizes)])
		rows := make([][]any, end-start)
		for j, r := range op.rows[start:end] {
			rows[j] = make([]any, len(idx))
			for c, x := range idx {
				rows[j][c] = r[x]
			}
		}
		rec, err := buildRecord(schema, rows)
		if err != nil {
			return err
		}
		switch op.kind {
		case opUpsert:
			_, err = tbl.Write(ctx, rec)
		case opDelete:
			_, err = tbl.Delete(ctx, rec)
		case opOverwrite:
			_, err = tbl.Overwrite(ctx, rec)
		}
		rec.Release()
		if err != nil {
			return fmt.Errorf("%s %s rows %d..%d: %w", op.kind, spec.ref(), start, end, err)
		}
		m.apply(pkOp{kind: op.kind, cols: op.cols, rows: op.rows[start:end]})
		start = end
	}
	return nil
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// project is the schema of the columns named cols of the table's schema,
// and their indexes in spec's columns.
func project(schema *arrow.Schema, spec *tableSpec, cols []string) (*arrow.Schema, []int, error) {
	fields := make([]arrow.Field, len(cols))
	idx := make([]int, len(cols))
	for i, name := range cols {
		f := schema.FieldIndices(name)
		x := slices.IndexFunc(spec.cols, func(c colSpec) bool { return c.name == name })
		if len(f) != 1 || x < 0 {
			return nil, nil, fmt.Errorf("%s has no column %q", spec.ref(), name)
		}
		fields[i], idx[i] = schema.Field(f[0]), x
	}
	return arrow.NewSchema(fields, nil), idx, nil
}
