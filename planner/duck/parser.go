package duck

import (
	"errors"

	bindings "github.com/duckdb/duckdb-go-bindings"
)

// parser is a connection with json_serialize_sql prepared on it, used by
// name analysis (names.go). Preparing that statement on each query's fresh
// connection cost ~0.5 ms per query (BenchmarkQueryOverhead); a pool of
// prepared parsers brings it to the execution alone. Parser connections
// never bind a Lakestream table.
type parser struct {
	c    bindings.Connection
	stmt bindings.PreparedStatement
}

const serializeSQL = "SELECT json_serialize_sql($1::VARCHAR)"

func (e *Engine) newParser() (*parser, error) {
	p := &parser{}
	if bindings.Connect(e.db, &p.c) == bindings.StateError {
		return nil, errors.New("connect")
	}
	if bindings.Prepare(p.c, serializeSQL, &p.stmt) == bindings.StateError {
		err := errors.New(bindings.PrepareError(p.stmt))
		p.close()
		return nil, err
	}
	return p, nil
}

func (p *parser) close() {
	bindings.DestroyPrepare(&p.stmt)
	bindings.Disconnect(&p.c)
}

// parseJSON returns json_serialize_sql(sql). It runs only while a query
// connection is open, so Close (which waits for those) never races it.
func (e *Engine) parseJSON(sql string) (string, error) {
	var p *parser
	select {
	case p = <-e.parsers:
	default:
		var err error
		if p, err = e.newParser(); err != nil {
			return "", err
		}
	}
	out, err := p.run(sql)
	if err != nil {
		p.close()
		return "", err
	}
	select {
	case e.parsers <- p:
	default:
		p.close()
	}
	return out, nil
}

func (p *parser) run(sql string) (string, error) {
	if bindings.BindVarchar(p.stmt, 1, sql) == bindings.StateError {
		return "", errors.New("bind parameter")
	}
	var res bindings.Result
	defer bindings.DestroyResult(&res)
	if bindings.ExecutePrepared(p.stmt, &res) == bindings.StateError {
		return "", errors.New(bindings.ResultError(&res))
	}
	chunk := bindings.FetchChunk(res)
	if chunk.Ptr == nil {
		return "", errors.New("no result")
	}
	defer bindings.DestroyDataChunk(&chunk)
	if bindings.DataChunkGetSize(chunk) != 1 {
		return "", errors.New("no result")
	}
	return stringAt(bindings.DataChunkGetVector(chunk, 0), 0), nil
}

// closeParsers frees the idle parsers; Close calls it once no query runs.
func (e *Engine) closeParsers() {
	for {
		select {
		case p := <-e.parsers:
			p.close()
		default:
			return
		}
	}
}
