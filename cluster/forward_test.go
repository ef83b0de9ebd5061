package cluster

import (
	"encoding/hex"
	"reflect"
	"testing"
)

func TestForwardFramesBytesPinned(t *testing.T) {
	q := ForwardRequest{BucketRef: BucketRef{TableID: 7, Bucket: 2}, SchemaID: 1, Kind: KindBatches, WriterID: 9, WriterSeq: 4, Body: []byte{0xaa, 0xbb}}
	const want = "01" + "0700000000000000" + "02000000" + "01000000" + "01" + "0900000000000000" + "04000000" + "aabb"
	if got := hex.EncodeToString(q.encode()); got != want {
		t.Fatalf("forward request bytes\n got %s\nwant %s", got, want)
	}
	p := ForwardResponse{Code: ForwardOK, Rows: 3, Duplicate: true, Message: "m"}
	const wantResp = "01" + "00" + "0300000000000000" + "01" + "01006d"
	if got := hex.EncodeToString(p.encode()); got != wantResp {
		t.Fatalf("forward response bytes\n got %s\nwant %s", got, wantResp)
	}
}

func TestForwardFramesRoundTripAndRefusals(t *testing.T) {
	q := ForwardRequest{BucketRef: BucketRef{TableID: 3, Bucket: 5}, SchemaID: 2, Kind: KindUpsert, WriterID: -8, WriterSeq: 11, Body: []byte("rows")}
	if got, err := decodeForwardRequest(q.encode(), MaxForwardBody); err != nil || !reflect.DeepEqual(got, q) {
		t.Errorf("forward request: %+v, %v", got, err)
	}
	p := ForwardResponse{Code: ForwardRefused, Message: "not the leader"}
	if got, err := decodeForwardResponse(p.encode()); err != nil || !reflect.DeepEqual(got, p) {
		t.Errorf("forward response: %+v, %v", got, err)
	}
	enc := q.encode()
	fixed := len(enc) - len(q.Body)
	for n := range fixed { // every truncation of the fixed fields
		if _, err := decodeForwardRequest(enc[:n], MaxForwardBody); err == nil {
			t.Errorf("a request truncated to %d bytes was taken", n)
		}
	}
	penc := p.encode()
	for n := range len(penc) {
		if _, err := decodeForwardResponse(penc[:n]); err == nil {
			t.Errorf("a response truncated to %d bytes was taken", n)
		}
	}
	for name, bad := range map[string]ForwardRequest{
		"unknown kind":          {Kind: 9},
		"negative bucket":       {BucketRef: BucketRef{Bucket: -1}, Kind: KindBatches},
		"sequence of no writer": {Kind: KindBatches, WriterSeq: 3},
	} {
		if _, err := decodeForwardRequest(bad.encode(), MaxForwardBody); err == nil {
			t.Errorf("%s: taken", name)
		}
	}
	big := ForwardRequest{Kind: KindBatches, Body: make([]byte, 101)}
	if _, err := decodeForwardRequest(big.encode(), 100); err == nil {
		t.Error("a body over the limit was taken")
	}
}
