package node

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromiumPath finds the browser: $LAKESTREAM_CHROMIUM, else Debian's
// chromium (apt-get install chromium; .ci/run installs it) or another
// Chromium on the PATH.
func chromiumPath(t *testing.T) string {
	if p := os.Getenv("LAKESTREAM_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no Chromium found for the status page test: install it (Debian: apt-get install -y chromium) or set LAKESTREAM_CHROMIUM")
	return ""
}

// browser is a headless Chromium session for a page test: ctx (90 s) drives
// it, and finish leaves a screenshot named name ($LAKESTREAM_SCREENSHOT_DIR,
// else the test's artifact directory: go test -artifacts keeps it), then
// fails the test for every console error or uncaught exception the page
// raised meanwhile.
func browser(t *testing.T, height int) (ctx context.Context, finish func(name string)) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromiumPath(t)), chromedp.NoSandbox,
		chromedp.Headless, chromedp.DisableGPU, chromedp.WindowSize(1360, height))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(cancelBrowser)
	if err := chromedp.Do(bctx); err != nil { // start the browser, before any deadline
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(bctx, 90*time.Second)
	t.Cleanup(cancel)

	var mu sync.Mutex
	var bad []string
	consoleCtx, stopConsole := context.WithCancel(ctx)
	messages := chromedp.Console(consoleCtx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.IsException() || m.Type == chromedp.ConsoleError {
				mu.Lock()
				bad = append(bad, m.String())
				mu.Unlock()
			}
		}
	}()
	return ctx, func(name string) {
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		dir := os.Getenv("LAKESTREAM_SCREENSHOT_DIR")
		if dir == "" {
			dir = t.ArtifactDir()
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", path)
		stopConsole()
		<-watched
		mu.Lock()
		defer mu.Unlock()
		for _, m := range bad {
			t.Errorf("console: %s", m)
		}
	}
}

// The status page in a real headless browser: it loads and shows a table
// just created, its row count follows an ingest without the page being
// reloaded, nothing is written to the console as an error or an uncaught
// exception, and a screenshot is left for a person to look at
// ($LAKESTREAM_SCREENSHOT_DIR, else the test's artifact directory: go test
// -artifacts keeps it).
func TestStatusPageInBrowser(t *testing.T) {
	n, stop, done := startNode(t, t.TempDir())
	defer func() { stop(); <-done }()
	cl := client(t, n.Addr())
	mustExec(t, cl, "CREATE TABLE events (id BIGINT, kind VARCHAR) WITH ('bucket.num'='2', 'bucket.key'='id')",
		"CREATE TABLE fresh (id BIGINT)")
	mustExec(t, cl, "INSERT INTO events SELECT range, 'click' FROM range(12000)")
	if _, err := cl.Execute(context.Background(), "SELECT * FROM missing_table"); err == nil {
		t.Fatal("query of a missing table succeeded")
	}

	ctx, finish := browser(t, 1000)

	url := "http://" + n.HTTPAddr() + "/"
	row := `document.querySelector('tr[data-table="default.fresh"] td.rows')`
	if err := chromedp.Do(ctx,
		chromedp.Navigate(url),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-table="default.fresh"]`)),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-table="default.events"]`)),
	); err != nil {
		t.Fatalf("the page does not show the tables: %v", err)
	}
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[string](row+`.dataset.rows`))
	if err != nil || rows != "0" {
		t.Fatalf("default.fresh shows %q rows (%v), want 0", rows, err)
	}
	// A mark on the window: a reload would lose it.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[int](`window.__lakestreamMark = 7`)); err != nil {
		t.Fatal(err)
	}

	mustExec(t, cl, "INSERT INTO fresh SELECT range FROM range(250)")
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](row+`?.dataset.rows === "250"`, chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
		t.Fatalf("the page did not show the 250 rows ingested: %v", err)
	}
	mark, err := chromedp.Run(ctx, chromedp.Evaluate[int](`window.__lakestreamMark`))
	if err != nil || mark != 7 {
		t.Fatalf("the page was reloaded (mark %d, %v): it must update in place", mark, err)
	}
	shown, err := chromedp.Run(ctx, chromedp.Evaluate[string](row+`.textContent`))
	if err != nil || shown != "250" {
		t.Fatalf("default.fresh's rows read %q (%v), want 250", shown, err)
	}
	for sel, want := range map[string]string{
		`tr[data-table="default.events"] td.rows`: "12.0k",
		`#errors tbody td.bad`:                    "NotFound",
		`#state`:                                  "live",
	} {
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('`+sel+`').textContent`))
		if err != nil || len(got) < len(want) || got[:len(want)] != want {
			t.Errorf("%s reads %q (%v), want it to start with %q", sel, got, err, want)
		}
	}

	finish("status-page.png")
}
