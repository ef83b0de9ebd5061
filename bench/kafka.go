package bench

import (
	"context"
	"embed"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lakestream/lakestream/internal/proc"
)

// The Kafka baseline: Apache Kafka (the version pinned in kafka/pom.xml)
// in KRaft mode, one process that is both broker and controller, on two
// free loopback ports, started once per Run from jars that
// kafka/fetch.sh copies out of Maven Central into Config.KafkaDir/jars.
// The cluster workload's baseline (kafka3) is three such processes, each
// broker and controller, the three controllers one KRaft quorum:
//
//	java -cp 'jars/*' kafka.tools.StorageTool format -t <id> -c server.properties
//	java <the JVM options of kafka-server-start.sh> -cp 'jars/*' kafka.Kafka server.properties
//
// The client is franz-go (github.com/twmb/franz-go), producers with
// acks=all (and idempotence, franz-go's default), compression = the node's
// -codec, each writer its own client (its own connection). Every
// measurement uses a fresh topic of 4 partitions (the tables' 4 buckets),
// replication factor 1, deleted after; on three brokers, of 1 partition
// (the cluster workload's one bucket), replication factor 3 and
// min.insync.replicas 2 (the table's). With sync=always the topic has
// flush.messages=1: the broker fsyncs each append before it answers, as
// the node does before acknowledging; with sync=never Kafka's default (the
// page cache, no fsync) matches the node's.
//
// Rows are encoded one Kafka record per row, which is how a stream of
// events is put into Kafka (a consumer gets events, partitioned by key),
// rather than one Arrow IPC batch per message, which would turn Kafka into
// a blob store and leave it nothing to do per row:
//
//	key   id           8 bytes, big-endian int64 (the partitioning key)
//	value amount       8 bytes, big-endian IEEE 754 float64
//	      ts           8 bytes, big-endian int64 µs since the epoch
//	      kind         the rest, UTF-8
//
// 8 + 16 + 6.7 bytes on average: about the 34 bytes of Arrow data per row.
// One ingest call is one ProduceSync of a batch's records: it returns once
// every record of the batch is acknowledged, as an ingest call does.

//go:embed kafka/pom.xml kafka/fetch.sh
var kafkaFetchFiles embed.FS

// kafkaClusterID is the KRaft cluster id of every benchmark broker (16
// bytes, base64url: "lakestreambench1").
const kafkaClusterID = "bGFrZXN0cmVhbWJlbmNoMQ"

// kafkaJVM are kafka-server-start.sh's and kafka-run-class.sh's JVM
// options, so that the broker runs as it would from the distribution.
var kafkaJVM = []string{"-Xmx1G", "-Xms1G", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
	"-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent", "-Djava.awt.headless=true",
	"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn"}

// kafkaServer is a running set of brokers and the admin client on them.
type kafkaServer struct {
	srvs       []*proc.Process
	dir        string
	addr       string   // the first broker's
	seeds      []string // every broker's, the clients' seeds
	partitions int      // of each topic
	rf         int      // each topic's replication factor: one replica per broker
	version    string
	codec      string // producer compression, the node's codec
	sync       string // the node's sync policy, mirrored by flush.messages
	admCl      *kgo.Client
	adm        *kadm.Client
}

// defaultKafkaDir is Config.KafkaDir's default: defaultCacheDir("kafka").
func defaultKafkaDir() string { return defaultCacheDir("kafka") }

// defaultCacheDir is where a baseline's jars are cached by default:
// .cache/<name> at the root of the source tree (found from the working
// directory up: go.mod beside bench/<name>/pom.xml), else lakestream/<name>
// in the user cache dir.
func defaultCacheDir(name string) string {
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			if fileExists(filepath.Join(d, "go.mod")) && fileExists(filepath.Join(d, "bench", name, "pom.xml")) {
				return filepath.Join(d, ".cache", name)
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	if c, err := os.UserCacheDir(); err == nil {
		return filepath.Join(c, "lakestream", name)
	}
	return filepath.Join(".cache", name)
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// kafkaJars returns the jar directory and the Kafka version in it, or an
// error when the jars are not there.
func kafkaJars(dir string) (jars, version string, err error) {
	jars = filepath.Join(dir, "jars")
	m, _ := filepath.Glob(filepath.Join(jars, "kafka_2.13-*.jar"))
	if len(m) != 1 {
		return "", "", fmt.Errorf("jars not cached in %s", jars)
	}
	return jars, strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m[0]), "kafka_2.13-"), ".jar"), nil
}

// fetchJars runs the embedded <name>/fetch.sh (Maven) of a baseline into
// dir, with its pom.xml beside it.
func fetchJars(ctx context.Context, files embed.FS, name, dir string, prog *progress) error {
	tmp, err := os.MkdirTemp("", "lakestream-"+name+"-fetch-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for _, f := range []string{"pom.xml", "fetch.sh"} {
		b, err := files.ReadFile(name + "/" + f)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(tmp, f), b, 0o644); err != nil {
			return err
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	prog.logf("fetching the %s jars from Maven Central into %s (once)", name, abs)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "bash", filepath.Join(tmp, "fetch.sh"), abs).CombinedOutput()
	if err != nil {
		return fmt.Errorf("fetch the jars (bench/%s/fetch.sh %s): %v: %s", name, abs, err, proc.Tail(out, 1500))
	}
	return nil
}

// startKafka starts the one-broker baseline.
func startKafka(ctx context.Context, cfg Config, prog *progress) (*kafkaServer, error) {
	return startKafkaBrokers(ctx, cfg, prog, 1, tableBuckets)
}

// startKafkaBrokers starts brokers processes, each broker and controller,
// whose topics have partitions partitions and one replica per broker.
func startKafkaBrokers(ctx context.Context, cfg Config, prog *progress, brokers, partitions int) (*kafkaServer, error) {
	jars, version, err := ensureJars(ctx, cfg, prog, "kafka", cfg.KafkaDir, kafkaFetchFiles, kafkaJars)
	if err != nil {
		return nil, err
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, errors.New("java not found on PATH (Kafka 4 needs Java 17 or newer)")
	}
	dir, err := os.MkdirTemp("", "lakestream-bench-kafka-")
	if err != nil {
		return nil, err
	}
	k := &kafkaServer{dir: dir, partitions: partitions, rf: brokers, version: version, codec: cfg.Codec, sync: cfg.Sync}
	if err := k.serve(ctx, java, filepath.Join(jars, "*"), brokers); err != nil { // the JVM expands the wildcard itself
		return nil, errors.Join(err, k.stop())
	}
	return k, nil
}

// ensureJars returns the jar directory and the version that lookup finds
// in dir, fetching the jars of name (bench/<name>/fetch.sh, embedded in
// files) first when they are not cached, except in Short mode.
func ensureJars(ctx context.Context, cfg Config, prog *progress, name, dir string, files embed.FS, lookup func(dir string) (jars, version string, err error)) (jars, version string, err error) {
	jars, version, err = lookup(dir)
	switch {
	case err == nil:
		return jars, version, nil
	case cfg.Short:
		return "", "", fmt.Errorf("%w; the short mode does not fetch them: run `bash bench/%s/fetch.sh %s`, or lakestream bench without -short", err, name, dir)
	}
	if err := fetchJars(ctx, files, name, dir, prog); err != nil {
		return "", "", err
	}
	return lookup(dir)
}

// serve formats each broker's storage, starts the brokers with classpath
// cp and waits until all have registered.
func (k *kafkaServer) serve(ctx context.Context, java, cp string, brokers int) error {
	props, err := k.writeProperties(brokers)
	if err != nil {
		return err
	}
	fctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for _, p := range props {
		format := exec.CommandContext(fctx, java, "-cp", cp, "kafka.tools.StorageTool", "format", "-t", kafkaClusterID, "-c", p)
		if out, err := format.CombinedOutput(); err != nil {
			return fmt.Errorf("kafka-storage format: %v: %s", err, proc.Tail(out, 1500))
		}
	}
	for i, p := range props {
		cmd := exec.Command(java, append(slices.Clone(kafkaJVM), "-cp", cp, "kafka.Kafka", p)...)
		srv, err := proc.Start(fmt.Sprintf("kafka broker %d", i+1), cmd, nil, syscall.SIGTERM)
		if err != nil {
			return err
		}
		k.srvs = append(k.srvs, srv)
	}
	if k.admCl, err = kgo.NewClient(kgo.SeedBrokers(k.seeds...), kgo.MetadataMinAge(100*time.Millisecond)); err != nil {
		return err
	}
	k.adm = kadm.NewClient(k.admCl)
	for _, srv := range k.srvs {
		err := srv.WaitReady(2*time.Minute, func() error {
			rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			bs, err := k.adm.ListBrokers(rctx)
			if err == nil && len(bs) < brokers {
				err = fmt.Errorf("%d of %d brokers registered", len(bs), brokers)
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// writeProperties writes a server.properties per broker, each broker and
// controller on two free loopback ports, the controllers one quorum, and
// returns their paths.
func (k *kafkaServer) writeProperties(brokers int) ([]string, error) {
	bports, cports := make([]int, brokers), make([]int, brokers)
	var voters []string
	for i := range brokers {
		var err error
		if bports[i], err = proc.FreePort(); err != nil {
			return nil, err
		}
		if cports[i], err = proc.FreePort(); err != nil {
			return nil, err
		}
		k.seeds = append(k.seeds, fmt.Sprintf("127.0.0.1:%d", bports[i]))
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, cports[i]))
	}
	k.addr = k.seeds[0]
	var paths []string
	for i := range brokers {
		dir := filepath.Join(k.dir, fmt.Sprintf("broker-%d", i+1))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		props := strings.Join([]string{
			"process.roles=broker,controller",
			fmt.Sprintf("node.id=%d", i+1),
			"controller.quorum.voters=" + strings.Join(voters, ","),
			fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", bports[i], cports[i]),
			fmt.Sprintf("advertised.listeners=PLAINTEXT://127.0.0.1:%d", bports[i]),
			"controller.listener.names=CONTROLLER",
			"inter.broker.listener.name=PLAINTEXT",
			"listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
			"log.dirs=" + filepath.Join(dir, "logs"),
			"offsets.topic.replication.factor=1",
			"transaction.state.log.replication.factor=1",
			"transaction.state.log.min.isr=1",
			"group.initial.rebalance.delay.ms=0",
			"auto.create.topics.enable=false",
		}, "\n") + "\n"
		p := filepath.Join(dir, "server.properties")
		if err := os.WriteFile(p, []byte(props), 0o644); err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// stop closes the admin client, stops the brokers and removes their data.
// The brokers stop together: one stopped after the others lost their
// controller quorum would wait out its controlled shutdown.
func (k *kafkaServer) stop() error {
	if k.admCl != nil {
		k.admCl.Close()
	}
	errs := make([]error, len(k.srvs)+1)
	var wg sync.WaitGroup
	for i, srv := range k.srvs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = srv.Stop() }()
	}
	wg.Wait()
	errs[len(k.srvs)] = os.RemoveAll(k.dir)
	return errors.Join(errs...)
}

// createTopic creates a topic of k.partitions partitions, k.rf replicas
// each, and waits until every partition has a leader and all its replicas
// in sync, so that the first produce does not wait for metadata.
func (k *kafkaServer) createTopic(ctx context.Context, name string) error {
	configs := map[string]*string{}
	if k.sync == "always" {
		one := "1"
		configs["flush.messages"] = &one
	}
	if k.rf > 1 {
		two := "2" // the cluster table's min.insync.replicas
		configs["min.insync.replicas"] = &two
	}
	if _, err := k.adm.CreateTopic(ctx, int32(k.partitions), int16(k.rf), configs, name); err != nil {
		return fmt.Errorf("kafka: create topic %s: %w", name, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		md, err := k.adm.Metadata(ctx, name)
		if err == nil && k.topicReady(md.Topics[name]) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kafka: topic %s has no leaders after 30s (%v)", name, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond): // polling the broker, not synchronising goroutines
		}
	}
}

func (k *kafkaServer) topicReady(t kadm.TopicDetail) bool {
	if t.Err != nil || len(t.Partitions) != k.partitions {
		return false
	}
	for _, p := range t.Partitions {
		if p.Err != nil || p.Leader < 0 || len(p.ISR) < k.rf {
			return false
		}
	}
	return true
}

func (k *kafkaServer) deleteTopic(ctx context.Context, name string) error {
	if _, err := k.adm.DeleteTopic(ctx, name); err != nil {
		return fmt.Errorf("kafka: delete topic %s: %w", name, err)
	}
	return nil
}

// checkRecords checks that a fresh topic holds want records: the sum of
// its partitions' end offsets.
func (k *kafkaServer) checkRecords(ctx context.Context, topic string, want int64) error {
	offs, err := k.adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("kafka: end offsets of %s: %w", topic, err)
	}
	var got int64
	var errs []error
	offs.Each(func(o kadm.ListedOffset) {
		got += o.Offset
		errs = append(errs, o.Err)
	})
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("kafka: end offsets of %s: %w", topic, err)
	}
	if got != want {
		return fmt.Errorf("kafka: %s holds %d records after producing, want %d", topic, got, want)
	}
	return nil
}

// compression is the producer codec for the node's -codec.
func (k *kafkaServer) compression() kgo.CompressionCodec {
	switch k.codec {
	case "zstd":
		return kgo.ZstdCompression()
	case "lz4":
		return kgo.Lz4Compression()
	}
	return kgo.NoCompression()
}

// producers opens n producer clients, each with its own connection:
// acks=all, idempotent, the node's codec, room to buffer a 65,536-row
// batch (the default, 50,000 records, would block ProduceSync midway).
func (k *kafkaServer) producers(n int) ([]*kgo.Client, func(), error) {
	cls := make([]*kgo.Client, 0, n)
	closeAll := func() {
		for _, c := range cls {
			c.Close()
		}
	}
	for range n {
		c, err := kgo.NewClient(kgo.SeedBrokers(k.seeds...), kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.ProducerBatchCompression(k.compression()), kgo.MaxBufferedRecords(1<<20),
			kgo.MetadataMinAge(100*time.Millisecond))
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("kafka producer: %w", err)
		}
		cls = append(cls, c)
	}
	return cls, closeAll, nil
}

// kafkaRecords encodes an events record as one Kafka record per row (the
// layout above), keys and values sliced out of one buffer.
func kafkaRecords(topic string, rec arrow.RecordBatch) []*kgo.Record {
	ids := rec.Column(0).(*array.Int64).Int64Values()
	amounts := rec.Column(1).(*array.Float64).Float64Values()
	kinds := rec.Column(2).(*array.String)
	ts := rec.Column(3).(*array.Timestamp).TimestampValues()
	n := len(ids)
	buf := make([]byte, 0, n*24+len(kinds.ValueBytes()))
	rs := make([]kgo.Record, n)
	out := make([]*kgo.Record, n)
	for i := range n {
		at := len(buf)
		buf = binary.BigEndian.AppendUint64(buf, uint64(ids[i]))
		buf = binary.BigEndian.AppendUint64(buf, math.Float64bits(amounts[i]))
		buf = binary.BigEndian.AppendUint64(buf, uint64(ts[i]))
		buf = append(buf, kinds.Value(i)...)
		rs[i] = kgo.Record{Topic: topic, Key: buf[at : at+8 : at+8], Value: buf[at+8 : len(buf) : len(buf)]}
		out[i] = &rs[i]
	}
	return out
}

// kafkaProduceOne produces one batch's rows and waits for every ack: the
// Kafka side of one ingest call.
func kafkaProduceOne(ctx context.Context, cl *kgo.Client, topic string, rec arrow.RecordBatch) error {
	rs := kafkaRecords(topic, rec)
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		return fmt.Errorf("kafka: produce to %s: %w", topic, err)
	}
	return nil
}

// kafkaIngestAll sends recs round-robin over the producers, one
// ProduceSync per batch (sendAll).
func kafkaIngestAll(ctx context.Context, cls []*kgo.Client, topic string, recs []arrow.RecordBatch, prog *progress) (time.Duration, error) {
	return sendAll(ctx, cls, recs, prog, func(ctx context.Context, cl *kgo.Client, rec arrow.RecordBatch) error {
		return kafkaProduceOne(ctx, cl, topic, rec)
	})
}

// kafkaConsume reads topic from its start with a client of its own (no
// consumer group: a direct consumer, as a changes() subscription has no
// group either) and notes every row's id as it arrives, until ctx ends.
func (k *kafkaServer) kafkaConsume(topic string, sub *subscriber) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		// FetchMaxWait: the Java consumer's fetch.max.wait.ms default, 500
		// ms, rather than franz-go's 5 s. A fetch returns as soon as one
		// byte is there (fetch.min.bytes = 1) either way; the bound matters
		// when the broker does not wake a parked fetch, which a new topic's
		// first fetch showed: it waited out the whole 5 s.
		cl, err := kgo.NewClient(kgo.SeedBrokers(k.seeds...), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond),
			kgo.MetadataMinAge(100*time.Millisecond))
		if err != nil {
			return fmt.Errorf("kafka consumer: %w", err)
		}
		defer cl.Close()
		var ids []int64
		for {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			for _, fe := range fs.Errors() {
				if !kerr.IsRetriable(fe.Err) && !errors.Is(fe.Err, context.Canceled) {
					return fmt.Errorf("kafka: fetch %s/%d: %w", fe.Topic, fe.Partition, fe.Err)
				}
			}
			ids = ids[:0]
			fs.EachRecord(func(r *kgo.Record) { ids = append(ids, int64(binary.BigEndian.Uint64(r.Key))) })
			if err := sub.note(ids); err != nil {
				return err
			}
		}
	}
}
