package bench

import (
	"bufio"
	"context"
	"embed"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/lakestream/lakestream/internal/proc"
)

// The Fluss baseline: Apache Fluss (the version pinned in fluss/pom.xml),
// one CoordinatorServer and one TabletServer, with the standalone
// ZooKeeper Fluss keeps its metadata in, each a JVM on free loopback ports
// with its data under a temp dir, started once per Run from jars that
// fluss/fetch.sh copies out of Maven Central into Config.FlussDir/jars:
//
//	java -cp <zookeeper jars> org.apache.zookeeper.server.ZooKeeperServerMain zoo.cfg
//	java -cp <fluss-server jar> org.apache.fluss.server.coordinator.CoordinatorServer --configDir coordinator
//	java -cp <fluss-server jar> org.apache.fluss.server.tablet.TabletServer --configDir tablet
//
// Fluss has no Go client (the official ones are Java and Rust), so the
// client side is fluss/Driver.java, compiled by javac into
// Config.FlussDir and run as one long-lived JVM (fluss_driver.go), which
// generates the same rows, writes and subscribes with the official Java
// client, and reports what it measured. With sync=always the tablet
// server has log.flush.interval-messages=1 (it fsyncs each append before
// answering, as Kafka's flush.messages=1); with sync=never Fluss's default
// (no fsync by count). Tables have the -codec as
// table.log.arrow.compression.type.

//go:embed fluss/pom.xml fluss/fetch.sh fluss/Driver.java
var flussFiles embed.FS

// flussJVM are the JVM options of every Fluss process: those of Kafka's
// scripts, and java.nio opened to the shaded Arrow, which reads buffer
// addresses by reflection (Java 17 refuses it otherwise).
var flussJVM = []string{"-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-Djava.awt.headless=true",
	"--add-opens=java.base/java.nio=ALL-UNNAMED", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn"}

// flussServer is a running Fluss cluster and the driver attached to it.
type flussServer struct {
	zk, coord, tablet *proc.Process
	driver            *flussDriver
	dir               string
	coordListener     string // FLUSS://127.0.0.1:<port>
	version           string
	codec             string // table.log.arrow.compression.type for the node's -codec
}

// flussJars returns the jar directory and the Fluss version in it.
func flussJars(dir string) (jars, version string, err error) {
	jars = filepath.Join(dir, "jars")
	m, _ := filepath.Glob(filepath.Join(jars, "fluss-server-*.jar"))
	if len(m) != 1 {
		return "", "", fmt.Errorf("jars not cached in %s", jars)
	}
	return jars, strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m[0]), "fluss-server-"), ".jar"), nil
}

// flussClasspaths splits the jar directory: ZooKeeper's jars (everything
// but Fluss's), the shaded server and the shaded client, each with the
// logging jars.
func flussClasspaths(jars string) (zk, srv, client string, err error) {
	all, err := filepath.Glob(filepath.Join(jars, "*.jar"))
	if err != nil {
		return "", "", "", err
	}
	var zkJars, logJars []string
	for _, j := range all {
		switch b := filepath.Base(j); {
		case strings.HasPrefix(b, "fluss-server-"):
			srv = j
		case strings.HasPrefix(b, "fluss-client-"):
			client = j
		case strings.HasPrefix(b, "slf4j-"):
			logJars = append(logJars, j)
			zkJars = append(zkJars, j)
		default:
			zkJars = append(zkJars, j)
		}
	}
	if srv == "" || client == "" || len(logJars) != 2 {
		return "", "", "", fmt.Errorf("%s: want fluss-server, fluss-client and slf4j-api/simple jars", jars)
	}
	cp := func(js ...string) string { return strings.Join(js, string(os.PathListSeparator)) }
	return cp(zkJars...), cp(append([]string{srv}, logJars...)...), cp(append([]string{client}, logJars...)...), nil
}

func startFluss(ctx context.Context, cfg Config, prog *progress) (*flussServer, error) {
	jars, version, err := ensureJars(ctx, cfg, prog, "fluss", cfg.FlussDir, flussFiles, flussJars)
	if err != nil {
		return nil, err
	}
	zkCP, srvCP, clientCP, err := flussClasspaths(jars)
	if err != nil {
		return nil, err
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, errors.New("java not found on PATH (Fluss needs Java 17 or newer)")
	}
	classes, err := compileDriver(ctx, cfg.FlussDir, clientCP)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "lakestream-bench-fluss-")
	if err != nil {
		return nil, err
	}
	f := &flussServer{dir: dir, version: version, codec: flussCodecs[cfg.Codec]}
	if err := f.serve(ctx, cfg, java, zkCP, srvCP); err != nil {
		return nil, errors.Join(err, f.stop())
	}
	f.driver, err = startDriver(ctx, java, clientCP+string(os.PathListSeparator)+classes, f.bootstrap(), cfg, f.alive)
	if err != nil {
		return nil, errors.Join(err, f.stop())
	}
	return f, nil
}

// flussCodecs map the node's -codec to table.log.arrow.compression.type.
var flussCodecs = map[string]string{"zstd": "ZSTD", "lz4": "LZ4_FRAME", "none": "NONE"}

// serve starts ZooKeeper, waits until it serves, then the coordinator
// and the tablet server, and waits until both listen. That a tablet
// server has registered with the coordinator, the driver waits for.
func (f *flussServer) serve(ctx context.Context, cfg Config, java, zkCP, srvCP string) error {
	ports := make([]int, 3) // zookeeper, coordinator, tablet server
	for i := range ports {
		p, err := proc.FreePort()
		if err != nil {
			return err
		}
		ports[i] = p
	}
	zkCfg, err := f.writeZooKeeperConfig(ports[0])
	if err != nil {
		return err
	}
	start := func(name string, heap []string, cp, main string, args ...string) (*proc.Process, error) {
		cmd := exec.Command(java, append(append(slices.Clone(heap), flussJVM...), append([]string{"-cp", cp, main}, args...)...)...)
		cmd.Dir = f.dir // the servers look for ./plugins
		return proc.Start(name, cmd, nil, syscall.SIGTERM)
	}
	if f.zk, err = start("zookeeper", []string{"-Xmx512m"}, zkCP, "org.apache.zookeeper.server.ZooKeeperServerMain", zkCfg); err != nil {
		return err
	}
	zkAddr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	if err := f.zk.WaitReady(time.Minute, func() error { return zooKeeperServing(zkAddr) }); err != nil {
		return err
	}
	for i, role := range []string{"coordinator", "tablet"} {
		conf, err := f.writeServerConfig(role, zkAddr, ports[1+i], cfg.Sync)
		if err != nil {
			return err
		}
		main, heap := "org.apache.fluss.server.coordinator.CoordinatorServer", []string{"-Xmx512m"}
		if role == "tablet" {
			main, heap = "org.apache.fluss.server.tablet.TabletServer", []string{"-Xmx1G", "-Xms1G"} // the Kafka broker's heap
		}
		s, err := start("fluss "+role, heap, srvCP, main, "--configDir", conf)
		if err != nil {
			return err
		}
		if role == "coordinator" {
			f.coord = s
		} else {
			f.tablet = s
		}
	}
	for i, s := range []*proc.Process{f.coord, f.tablet} {
		addr := fmt.Sprintf("127.0.0.1:%d", ports[1+i])
		if err := s.WaitReady(2*time.Minute, func() error { return listening(addr) }); err != nil {
			return err
		}
	}
	return nil
}

// bootstrap is the coordinator's address, the client's bootstrap.servers.
func (f *flussServer) bootstrap() string {
	return strings.TrimPrefix(f.coordListener, "FLUSS://")
}

// writeZooKeeperConfig writes zoo.cfg for a standalone server on port,
// loopback only, without the admin server (Jetty is not on the
// classpath), and returns its path.
func (f *flussServer) writeZooKeeperConfig(port int) (string, error) {
	data := filepath.Join(f.dir, "zookeeper")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return "", err
	}
	conf := strings.Join([]string{
		"tickTime=2000",
		"dataDir=" + data,
		fmt.Sprintf("clientPort=%d", port),
		"clientPortAddress=127.0.0.1",
		"admin.enableServer=false",
		"4lw.commands.whitelist=srvr",
	}, "\n") + "\n"
	p := filepath.Join(f.dir, "zoo.cfg")
	return p, os.WriteFile(p, []byte(conf), 0o644)
}

// writeServerConfig writes <role>/server.yaml and returns the directory.
func (f *flussServer) writeServerConfig(role, zkAddr string, port int, sync string) (string, error) {
	dir := filepath.Join(f.dir, role)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	listener := fmt.Sprintf("FLUSS://127.0.0.1:%d", port)
	lines := []string{
		"zookeeper.address: " + zkAddr,
		"bind.listeners: " + listener,
		"data.dir: " + filepath.Join(dir, "data"),
		"remote.data.dir: " + filepath.Join(f.dir, "remote"),
	}
	switch role {
	case "coordinator":
		f.coordListener = listener
	case "tablet":
		lines = append(lines, "tablet-server.id: 0")
		if sync == "always" {
			lines = append(lines, "log.flush.interval-messages: 1")
		}
	}
	return dir, os.WriteFile(filepath.Join(dir, "server.yaml"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

// zooKeeperServing asks ZooKeeper "srvr": it answers with its mode once it
// serves (its port opens earlier, and stays open if start-up fails).
func zooKeeperServing(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(2 * time.Second)); err != nil {
		return err
	}
	if _, err := c.Write([]byte("srvr")); err != nil {
		return err
	}
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "Mode: ") {
			return nil
		}
	}
	return fmt.Errorf("zookeeper: no mode in the srvr answer (%v)", sc.Err())
}

// listening reports whether something accepts connections on addr.
func listening(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	return c.Close()
}

// alive reports the first Fluss process that has exited, with its output.
func (f *flussServer) alive() error {
	for _, s := range []*proc.Process{f.zk, f.coord, f.tablet} {
		if s != nil {
			if err := s.Alive(); err != nil {
				return err
			}
		}
	}
	return nil
}

// stop ends the driver, the tablet server, the coordinator, then
// ZooKeeper (the servers deregister from it on the way down), and removes
// the data.
func (f *flussServer) stop() error {
	var errs []error
	if f.driver != nil {
		errs = append(errs, f.driver.srv.Stop())
	}
	for _, s := range []*proc.Process{f.tablet, f.coord, f.zk} {
		if s != nil {
			errs = append(errs, s.Stop())
		}
	}
	return errors.Join(append(errs, os.RemoveAll(f.dir))...)
}
