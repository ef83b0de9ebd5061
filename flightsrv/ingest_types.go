package flightsrv

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lakestream/lakestream/catalog"
)

// storageSchema is the schema an ingest creates a table from: extension
// types are their storage type (a UUID column is a BLOB), nested ones too.
// Other encodings (views, large and dictionary types) map to table types
// in the catalog's own conversion, and the rows are cast on the way in
// (tables' conform).
func storageSchema(s *arrow.Schema) *arrow.Schema {
	fields := s.Fields()
	for i := range fields {
		fields[i].Type = storageType(fields[i].Type)
	}
	md := s.Metadata()
	return arrow.NewSchema(fields, &md)
}

func storageType(t arrow.DataType) arrow.DataType {
	switch t := t.(type) {
	case arrow.ExtensionType:
		return storageType(t.StorageType())
	case *arrow.ListType:
		return arrow.ListOfField(storageField(t.ElemField()))
	case *arrow.LargeListType:
		return arrow.LargeListOfField(storageField(t.ElemField()))
	case *arrow.FixedSizeListType:
		return arrow.FixedSizeListOfField(t.Len(), storageField(t.ElemField()))
	case *arrow.MapType:
		m := arrow.MapOfFields(storageField(t.KeyField()), storageField(t.ItemField()))
		m.KeysSorted = t.KeysSorted
		return m
	case *arrow.StructType:
		fields := t.Fields()
		for i := range fields {
			fields[i] = storageField(fields[i])
		}
		return arrow.StructOf(fields...)
	case *arrow.DictionaryType:
		return &arrow.DictionaryType{IndexType: t.IndexType, ValueType: storageType(t.ValueType), Ordered: t.Ordered}
	}
	return t
}

func storageField(f arrow.Field) arrow.Field {
	f.Type = storageType(f.Type)
	return f
}

// dropCreated drops the table a failed ingest created, so that a create,
// create_append or replace ingest that fails leaves no table behind. It
// runs even when the client went away (ctx cancelled), and reports
// nothing: the ingest's own error is the one the client needs.
func (s *Server) dropCreated(ctx context.Context, db, name string) {
	drop := &catalog.DropTable{Table: catalog.TableName{DB: db, Name: name}, IfExists: true}
	if err := s.store.Exec(context.WithoutCancel(ctx), drop); err != nil {
		s.opts.Logger.Warn("drop the table of a failed ingest", "table", db+"."+name, "err", err)
	}
}
