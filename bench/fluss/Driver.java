// The Fluss side of `lakestream bench` (bench/fluss.go): a long-lived
// process the harness drives over stdin/stdout, so that the JVM, its
// connections and its JIT stay warm across runs, as the Kafka side's
// franz-go clients do. One command per line in, one JSON line out:
//
//   digest FROM N                         {"digest":"<uint64>"}  rows [FROM, FROM+N)
//   ingest TABLE ROWS BATCH CODEC         {"nanos":N}            first append to last ack
//   subscribe TABLE RATE BATCHES PER CODEC FILE
//                                         {"scheduleNanos":N}    times in FILE
//   anything that fails                   {"error":"..."}
//
// Usage: java -cp 'fluss-client.jar:slf4j-*.jar:DIR' Driver BOOTSTRAP WRITERS [KEY=VALUE...]
// (KEY=VALUE: client options, none by default).
//
// Rows are generated here, row i a pure function of i exactly as
// bench/data.go does (the digest command lets the harness check that):
// the Fluss client takes rows (InternalRow), not Arrow batches, so the
// harness's Arrow batches could not be handed over as they are.
import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.DataOutputStream;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

import org.apache.fluss.client.Connection;
import org.apache.fluss.client.ConnectionFactory;
import org.apache.fluss.client.admin.Admin;
import org.apache.fluss.client.admin.OffsetSpec;
import org.apache.fluss.client.table.Table;
import org.apache.fluss.client.table.scanner.ScanRecord;
import org.apache.fluss.client.table.scanner.log.LogScanner;
import org.apache.fluss.client.table.writer.AppendWriter;
import org.apache.fluss.cluster.ServerNode;
import org.apache.fluss.cluster.ServerType;
import org.apache.fluss.config.Configuration;
import org.apache.fluss.metadata.Schema;
import org.apache.fluss.metadata.TableDescriptor;
import org.apache.fluss.metadata.TablePath;
import org.apache.fluss.row.BinaryString;
import org.apache.fluss.row.GenericRow;
import org.apache.fluss.row.TimestampLtz;
import org.apache.fluss.types.DataTypes;

public final class Driver {
    static final int BUCKETS = 4; // the tables' 4 buckets, by id
    static final long BASE_MICROS = 1_700_000_000_000_000L;
    static final String[] KINDS = {"click", "view", "purchase", "refund", "add_to_cart", "checkout"};
    static final BinaryString[] KIND_STRINGS = new BinaryString[KINDS.length];
    static final long TIMEOUT_NANOS = 30_000_000_000L; // as subscribeTimeout

    static {
        for (int i = 0; i < KINDS.length; i++) {
            KIND_STRINGS[i] = BinaryString.fromString(KINDS[i]);
        }
    }

    final Connection[] writers; // one connection per writer, as one franz-go client per producer
    final Connection reader; // the admin and the subscriptions
    final Admin admin;

    Driver(String bootstrap, int n, String[] options) {
        Configuration conf = new Configuration();
        conf.setString("bootstrap.servers", bootstrap);
        for (String kv : options) {
            conf.setString(kv.substring(0, kv.indexOf('=')), kv.substring(kv.indexOf('=') + 1));
        }
        writers = new Connection[n];
        for (int i = 0; i < n; i++) {
            writers[i] = ConnectionFactory.createConnection(conf);
        }
        reader = ConnectionFactory.createConnection(conf);
        admin = reader.getAdmin();
    }

    public static void main(String[] args) throws Exception {
        Driver d = new Driver(args[0], Integer.parseInt(args[1]), Arrays.copyOfRange(args, 2, args.length));
        d.awaitTabletServer();
        System.out.println("{\"ready\":true}");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            String reply;
            try {
                reply = d.run(line.trim().split(" "));
            } catch (Throwable t) {
                reply = "{\"error\":\"" + describe(t).replace("\\", "\\\\").replace("\"", "'").replace('\n', ' ') + "\"}";
            }
            System.out.println(reply);
        }
        System.exit(0); // the clients' threads would keep the JVM up
    }

    // describe is t and its causes, on one line.
    static String describe(Throwable t) {
        StringBuilder b = new StringBuilder();
        for (; t != null; t = t.getCause()) {
            b.append(b.length() > 0 ? ": " : "").append(t.getClass().getSimpleName());
            if (t.getMessage() != null) {
                b.append(" (").append(t.getMessage()).append(')');
            }
        }
        return b.toString();
    }

    String run(String[] a) throws Exception {
        switch (a[0]) {
            case "digest":
                return "{\"digest\":\"" + Long.toUnsignedString(digest(Long.parseLong(a[1]), Integer.parseInt(a[2]))) + "\"}";
            case "ingest":
                return "{\"nanos\":" + ingest(a[1], Integer.parseInt(a[2]), Integer.parseInt(a[3]), a[4]) + "}";
            case "subscribe":
                return "{\"scheduleNanos\":" + subscribe(a[1], Integer.parseInt(a[2]), Integer.parseInt(a[3]), Integer.parseInt(a[4]), a[5], a[6]) + "}";
            default:
                throw new IllegalArgumentException("unknown command " + a[0]);
        }
    }

    // awaitTabletServer polls the coordinator until a tablet server has
    // registered: the cluster can take writes.
    void awaitTabletServer() throws Exception {
        long deadline = System.nanoTime() + 4 * TIMEOUT_NANOS;
        while (true) {
            try {
                for (ServerNode n : admin.getServerNodes().get()) {
                    if (n.serverType() == ServerType.TABLET_SERVER) {
                        return;
                    }
                }
            } catch (Exception e) {
                if (System.nanoTime() > deadline) {
                    throw e;
                }
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("no tablet server registered");
            }
            Thread.sleep(100); // polling the coordinator
        }
    }

    // mix and row are bench/data.go's mix and events, row by row.
    static long mix(long i) {
        long x = i * 0x9E3779B97F4A7C15L + 1;
        x ^= x << 13;
        x ^= x >>> 7;
        x ^= x << 17;
        return x;
    }

    static GenericRow row(long id) {
        long x = mix(id);
        return GenericRow.of(id, (double) Long.remainderUnsigned(x, 100_000) / 100,
                KIND_STRINGS[(int) Long.remainderUnsigned(x, KINDS.length)],
                TimestampLtz.fromEpochMicros(BASE_MICROS + id * 1000 + Long.remainderUnsigned(x, 1000)));
    }

    static GenericRow[] rows(long from, int n) {
        GenericRow[] out = new GenericRow[n];
        for (int i = 0; i < n; i++) {
            out[i] = row(from + i);
        }
        return out;
    }

    // digest is bench/fluss.go's rowsDigest: FNV-1a over each row's fields.
    static long digest(long from, int n) {
        long h = 0xcbf29ce484222325L;
        for (GenericRow r : rows(from, n)) {
            for (long v : new long[] {r.getLong(0), Double.doubleToRawLongBits(r.getDouble(1)), r.getTimestampLtz(3, 6).toEpochMicros()}) {
                h = (h ^ v) * 0x100000001b3L;
            }
            for (byte b : r.getString(2).toBytes()) {
                h = (h ^ (b & 0xff)) * 0x100000001b3L;
            }
        }
        return h;
    }

    // create makes a log table (no primary key) of the events' columns, 4
    // buckets by id, and waits until every bucket has a leader.
    TablePath create(String table, String codec) throws Exception {
        TablePath path = TablePath.of("fluss", table);
        Schema schema = Schema.newBuilder()
                .column("id", DataTypes.BIGINT().copy(false))
                .column("amount", DataTypes.DOUBLE())
                .column("kind", DataTypes.STRING())
                .column("ts", DataTypes.TIMESTAMP_LTZ(6))
                .build();
        TableDescriptor desc = TableDescriptor.builder().schema(schema).distributedBy(BUCKETS, "id")
                .property("table.log.arrow.compression.type", codec).build();
        admin.createTable(path, desc, false).get();
        long deadline = System.nanoTime() + TIMEOUT_NANOS;
        while (true) {
            try {
                endOffset(path);
                return path;
            } catch (Exception e) {
                if (System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.sleep(20); // polling the bucket leaders
            }
        }
    }

    // endOffset is the sum of the buckets' latest offsets: the rows a fresh
    // table holds.
    long endOffset(TablePath path) throws Exception {
        List<Integer> buckets = new ArrayList<>();
        for (int b = 0; b < BUCKETS; b++) {
            buckets.add(b);
        }
        long sum = 0;
        for (long o : admin.listOffsets(path, buckets, new OffsetSpec.LatestSpec()).all().get().values()) {
            sum += o;
        }
        return sum;
    }

    AppendWriter[] appendWriters(TablePath path, List<Table> opened) {
        AppendWriter[] ws = new AppendWriter[writers.length];
        for (int i = 0; i < ws.length; i++) {
            Table t = writers[i].getTable(path);
            opened.add(t);
            ws[i] = t.newAppend().createWriter();
        }
        return ws;
    }

    // send appends one batch and waits until every row is acknowledged
    // (client.writer.acks=all, the default): flush sends it now instead of
    // after client.writer.batch-timeout, as ProduceSync does.
    static void send(AppendWriter w, GenericRow[] batch) throws Exception {
        CompletableFuture<?>[] acks = new CompletableFuture<?>[batch.length];
        for (int i = 0; i < batch.length; i++) {
            acks[i] = w.append(batch[i]);
        }
        w.flush();
        CompletableFuture.allOf(acks).get();
    }

    // ingest: rows rows cut into batches of batchRows, generated before the
    // clock; writer w sends batches w, w+W, ... (bench's sendAll).
    long ingest(String table, int rows, int batchRows, String codec) throws Exception {
        TablePath path = create(table, codec);
        try {
            return ingestInto(path, rows, batchRows);
        } finally {
            admin.dropTable(path, true).get();
        }
    }

    long ingestInto(TablePath path, int rows, int batchRows) throws Exception {
        List<Table> opened = new ArrayList<>();
        AppendWriter[] ws = appendWriters(path, opened);
        List<GenericRow[]> batches = new ArrayList<>();
        for (int from = 0; from < rows; from += batchRows) {
            batches.add(rows(from, Math.min(batchRows, rows - from)));
        }
        AtomicReference<Throwable> failed = new AtomicReference<>();
        Thread[] threads = new Thread[ws.length];
        long start = System.nanoTime();
        for (int w = 0; w < ws.length; w++) {
            final int wi = w;
            threads[w] = new Thread(() -> {
                for (int i = wi; i < batches.size() && failed.get() == null; i += ws.length) {
                    try {
                        send(ws[wi], batches.get(i));
                    } catch (Throwable t) {
                        failed.compareAndSet(null, t);
                    }
                }
            });
            threads[w].start();
        }
        for (Thread t : threads) {
            t.join();
        }
        long nanos = System.nanoTime() - start;
        closeAll(opened);
        if (failed.get() != null) {
            throw new Exception("ingest into " + path, failed.get());
        }
        long got = endOffset(path);
        if (got != rows) {
            throw new IllegalStateException(path + " holds " + got + " rows after ingest, want " + rows);
        }
        return nanos;
    }

    static void closeAll(List<Table> ts) throws Exception {
        for (Table t : ts) {
            t.close();
        }
    }

    // subscribe is bench's measureRate for Fluss: a log scanner reads the
    // table from its start while the writers send batches of per rows on
    // the schedule; FILE gets, as big-endian int64 ns since the start,
    // every batch's call and ack times and every row's receipt time.
    long subscribe(String table, int rate, int nb, int per, String codec, String file) throws Exception {
        long start = System.nanoTime();
        TablePath path = create(table, codec);
        List<Table> opened = new ArrayList<>();
        AppendWriter[] ws = appendWriters(path, opened);
        Table rt = reader.getTable(path);
        opened.add(rt);
        Subscriber sub = new Subscriber(rt.newScan().createLogScanner(), start, nb * per, per);
        sub.thread.start();
        try {
            send(ws[0], rows(-per, per)); // one batch before the clock: the stream is up once it arrived
            sub.await(() -> sub.warmup.get() == 0, "warm-up batch");
            long[] calls = new long[nb], acks = new long[nb];
            long schedule = writeAtRate(ws, rate, nb, per, start, calls, acks);
            sub.await(() -> sub.got.get() == (long) nb * per, "rows");
            sub.stop();
            try (DataOutputStream out = new DataOutputStream(new BufferedOutputStream(new FileOutputStream(file)))) {
                for (long[] a : new long[][] {calls, acks, sub.recv}) {
                    for (long v : a) {
                        out.writeLong(v);
                    }
                }
            }
            return schedule;
        } finally {
            sub.stop();
            closeAll(opened);
            admin.dropTable(path, true).get();
        }
    }

    // writeAtRate is bench's writeAtRate: batch k due k·per/rate s after
    // the first, handed to a free writer (a SynchronousQueue, as the
    // unbuffered channel); returns the schedule's length.
    static long writeAtRate(AppendWriter[] ws, int rate, int nb, int per, long start, long[] calls, long[] acks) throws Exception {
        long interval = (long) ((double) per / rate * 1e9);
        SynchronousQueue<Integer> work = new SynchronousQueue<>();
        AtomicReference<Throwable> failed = new AtomicReference<>();
        Thread[] threads = new Thread[ws.length];
        for (int w = 0; w < ws.length; w++) {
            final AppendWriter aw = ws[w];
            threads[w] = new Thread(() -> {
                for (int k; (k = take(work)) >= 0; ) {
                    if (failed.get() != null) {
                        continue; // drain until the end marker
                    }
                    try {
                        GenericRow[] batch = rows((long) k * per, per);
                        calls[k] = System.nanoTime() - start;
                        send(aw, batch);
                        acks[k] = System.nanoTime() - start;
                    } catch (Throwable t) {
                        failed.compareAndSet(null, t);
                    }
                }
            });
            threads[w].start();
        }
        long first = System.nanoTime(), lastSend = first;
        for (int k = 0; k < nb && failed.get() == null; k++) {
            LockSupport.parkNanos(first + k * interval - System.nanoTime()); // pacing
            work.put(k);
            lastSend = System.nanoTime();
        }
        for (int w = 0; w < threads.length; w++) {
            work.put(-1); // the end marker, one per writer
        }
        for (Thread t : threads) {
            t.join();
        }
        if (failed.get() != null) {
            throw new Exception("write", failed.get());
        }
        return lastSend - first + interval;
    }

    static int take(SynchronousQueue<Integer> q) {
        try {
            return q.take();
        } catch (InterruptedException e) {
            return -1;
        }
    }

    // Subscriber is bench's subscriber: one thread polls the scanner and
    // notes each row's receipt (ns since start) as poll returns it.
    static final class Subscriber {
        final LogScanner scanner;
        final long start;
        final long[] recv;
        final AtomicLong got = new AtomicLong(), warmup;
        final AtomicReference<Throwable> failed = new AtomicReference<>();
        volatile boolean stopping;
        final Thread thread;

        Subscriber(LogScanner scanner, long start, int rows, int warmup) {
            this.scanner = scanner;
            this.start = start;
            this.recv = new long[rows];
            this.warmup = new AtomicLong(warmup);
            for (int b = 0; b < BUCKETS; b++) {
                scanner.subscribeFromBeginning(b);
            }
            thread = new Thread(this::read);
        }

        void read() {
            try {
                while (!stopping) {
                    long n = 0;
                    Iterable<ScanRecord> rs = scanner.poll(Duration.ofMillis(100));
                    long now = Math.max(1, System.nanoTime() - start);
                    for (ScanRecord r : rs) {
                        long id = r.getRow().getLong(0);
                        if (id < 0) {
                            warmup.decrementAndGet();
                        } else if (id >= recv.length) {
                            throw new IllegalStateException("unexpected id " + id);
                        } else if (recv[(int) id] != 0) {
                            throw new IllegalStateException("id " + id + " received twice");
                        } else {
                            recv[(int) id] = now;
                            n++;
                        }
                    }
                    got.addAndGet(n);
                }
            } catch (Throwable t) {
                if (!stopping) {
                    failed.set(t);
                }
            }
        }

        void await(java.util.function.BooleanSupplier done, String what) throws Exception {
            long deadline = System.nanoTime() + TIMEOUT_NANOS;
            while (!done.getAsBoolean()) {
                if (failed.get() != null) {
                    throw new Exception("subscription", failed.get());
                }
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException(what + " not received in 30 s: " + got.get() + " of " + recv.length + " rows");
                }
                Thread.sleep(1); // polling the count, as bench's subscriber.wait
            }
        }

        void stop() throws Exception {
            if (!stopping) {
                stopping = true;
                scanner.wakeup();
                thread.join();
                scanner.close();
            }
        }
    }
}
