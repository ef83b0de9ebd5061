package flightsrv

import (
	"reflect"
	"testing"
)

func TestSplitByNode(t *testing.T) {
	a := Location{Node: "a", URI: "grpc+tcp://a:1", Self: true}
	b := Location{Node: "b", URI: "grpc+tcp://b:1"}
	c := Location{Node: "c", URI: "grpc+tcp://c:1"}
	here, there, err := splitByNode(nil, []Location{b, a, c, b, a, c, c})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(here, []int{1, 4}) {
		t.Errorf("here %v, want [1 4]", here)
	}
	want := []remoteGroup{{at: b, buckets: []int{0, 3}}, {at: c, buckets: []int{2, 5, 6}}}
	if !reflect.DeepEqual(there, want) {
		t.Errorf("there %+v, want %+v", there, want)
	}
}

// Each node's buckets get their share of the endpoints: one per bucket
// while they fit, never none, every bucket in one group.
func TestEndpointShare(t *testing.T) {
	for _, tt := range []struct{ n, total, limit, want int }{
		{2, 6, 16, 2}, {1, 6, 16, 1}, {10, 40, 16, 4}, {1, 40, 16, 1}, {30, 40, 16, 12}, {0, 6, 16, 0},
	} {
		if got := endpointShare(tt.n, tt.total, tt.limit); got != tt.want {
			t.Errorf("endpointShare(%d, %d, %d) = %d, want %d", tt.n, tt.total, tt.limit, got, tt.want)
		}
	}
	if got := roundRobin([]int{3, 4, 5, 6, 7}, 2); !reflect.DeepEqual(got, [][]int{{3, 5, 7}, {4, 6}}) {
		t.Errorf("roundRobin: %v", got)
	}
}
