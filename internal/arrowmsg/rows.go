package arrowmsg

// RecordBatchRows reads only the row count of a Message flatbuffer holding
// a RecordBatch, without its nodes, buffers or metadata: what a counter of
// the rows sent needs, at a cost that does not grow with the columns.
// ok is false for another message (a schema, a dictionary) or one that
// does not parse; it never panics.
func RecordBatchRows(meta []byte) (rows int64, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			rows, ok = 0, false
		}
	}()
	msg, err := rootTable(meta)
	if err != nil {
		return 0, false
	}
	if kind, err := msg.uint8Field(msgHeaderType, 0); err != nil || kind != headerRecordBatch {
		return 0, false
	}
	rb, found, err := msg.tableField(msgHeader)
	if err != nil || !found {
		return 0, false
	}
	n, err := rb.int64Field(rbLength, 0)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}
