package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/twmb/franz-go/pkg/kgo"
)

// subscribeSide is one system under the subscription workload: a feed,
// which measureRate drives, or a selfTimed side, which measures a rate
// itself.
type subscribeSide interface {
	// system names it in the figures.
	system() string
}

// selfTimed measures a rate on its own: the Fluss driver (fluss_driver.go),
// whose writers and subscriber share a JVM and its clock, in the way
// measureRate does.
type selfTimed interface {
	subscribeSide
	measureRate(ctx context.Context, e *env, rate int, d time.Duration, label string) (*rateResult, error)
}

// measureSide measures rate on s for d.
func measureSide(ctx context.Context, e *env, s subscribeSide, rate int, d time.Duration, label string) (*rateResult, error) {
	if st, ok := s.(selfTimed); ok {
		return st.measureRate(ctx, e, rate, d, label)
	}
	return measureRate(ctx, e, s.(feed), rate, d, label)
}

// feed is a system that measureRate drives: Lakestream over Flight SQL,
// or Kafka, every one the same way.
type feed interface {
	subscribeSide
	// open creates a fresh stream (a table, a topic) and starts a
	// subscription to it, from its start, that notes rows in sub.
	open(ctx context.Context, sub *subscriber) (stream string, err error)
	// send writes one batch on writer w's connection, returning once the
	// batch is acknowledged.
	send(ctx context.Context, w int, stream string, rec arrow.RecordBatch) error
	// writers is how many sends may be in flight, one per writer.
	writers() int
	// drop removes the stream.
	drop(ctx context.Context, stream string) error
}

// lakeFeed: cls[0] subscribes with changes(t, 'latest'), the others write
// with ExecuteIngest.
type lakeFeed struct {
	e   *env
	cls []*flightsql.Client
	// name and create, when set, name the feed in the figures and create
	// its tables (the cluster workload's single node, one bucket);
	// default "lakestream" and env.createTable.
	name   string
	create func(ctx context.Context) (string, error)
}

func (f *lakeFeed) system() string {
	if f.name != "" {
		return f.name
	}
	return "lakestream"
}
func (f *lakeFeed) writers() int { return len(f.cls) - 1 }

func (f *lakeFeed) open(ctx context.Context, sub *subscriber) (string, error) {
	create := f.create
	if create == nil {
		create = func(ctx context.Context) (string, error) { return f.e.createTable(ctx, "sub") }
	}
	table, err := create(ctx)
	if err != nil {
		return "", err
	}
	info, err := f.cls[0].Execute(ctx, fmt.Sprintf("SELECT id, _bucket, _offset FROM changes('%s', 'latest')", table))
	if err != nil {
		return "", err
	}
	if n := len(info.GetEndpoint()); n != 1 {
		return "", fmt.Errorf("changes(%s): %d endpoints, want 1", table, n)
	}
	ticket := info.GetEndpoint()[0].GetTicket()
	sub.run(ctx, func(ctx context.Context) error {
		rdr, err := f.cls[0].DoGet(ctx, ticket)
		if err != nil {
			return err
		}
		defer rdr.Release()
		return readChanges(rdr, sub)
	})
	return table, nil
}

// readChanges notes the ids of every record of a changes() stream.
func readChanges(rdr *flight.Reader, sub *subscriber) error {
	for rdr.Next() {
		rec := rdr.RecordBatch()
		ids, ok := rec.Column(0).(*array.Int64)
		if !ok {
			return fmt.Errorf("changes: id column is %s", rec.Column(0).DataType())
		}
		if err := sub.note(ids.Int64Values()); err != nil {
			return fmt.Errorf("changes: %w", err)
		}
	}
	if err := rdr.Err(); err != nil {
		return fmt.Errorf("changes stream: %w", err)
	}
	return nil
}

func (f *lakeFeed) send(ctx context.Context, w int, table string, rec arrow.RecordBatch) error {
	return ingestOne(ctx, f.cls[1+w], table, rec)
}

func (f *lakeFeed) drop(ctx context.Context, table string) error { return f.e.dropTable(ctx, table) }

// kafkaFeed: a producer client per writer; each subscription is a
// consumer client of its own (kafka.go).
type kafkaFeed struct {
	k      *kafkaServer
	prods  []*kgo.Client
	topics int
	name   string // in the figures; default "kafka"
}

func (f *kafkaFeed) system() string {
	if f.name != "" {
		return f.name
	}
	return baselineSystems["kafka"]
}
func (f *kafkaFeed) writers() int { return len(f.prods) }

func (f *kafkaFeed) open(ctx context.Context, sub *subscriber) (string, error) {
	f.topics++
	topic := fmt.Sprintf("sub_%d", f.topics)
	if err := f.k.createTopic(ctx, topic); err != nil {
		return "", err
	}
	sub.run(ctx, f.k.kafkaConsume(topic, sub))
	return topic, nil
}

func (f *kafkaFeed) send(ctx context.Context, w int, topic string, rec arrow.RecordBatch) error {
	return kafkaProduceOne(ctx, f.prods[w], topic, rec)
}

func (f *kafkaFeed) drop(ctx context.Context, topic string) error { return f.k.deleteTopic(ctx, topic) }
