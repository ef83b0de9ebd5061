package node

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteStatus prints st as the status page shows it, for a terminal
// (`lakestream status`): the node, the current rates, the tables, the
// subscriptions, the recent errors and what start-up could not open, with
// the page's units.
func WriteStatus(w io.Writer, st Status) error {
	t := st.Totals
	fmt.Fprintf(w, "Lakestream %s, up %s, Flight SQL %s, data %s\n", st.Version, HumanDuration(st.UptimeSeconds), st.Flight, st.DataDir)
	fmt.Fprintf(w, "ingest %s (%s/s), queries %s, scanned %s, errors %s since start\n",
		HumanRate(t.IngestRowsPerSecond, "rows"), HumanBytes(t.IngestBytesPerSec), HumanRate(t.QueriesPerSecond, "queries"),
		HumanRate(t.ScanRowsPerSecond, "rows"), HumanCount(float64(t.Errors)))
	fmt.Fprintf(w, "%s tables, %s rows, %s on disk, %s in the lake, %s subscriptions, %s prepared statements\n",
		HumanCount(float64(t.Tables)), HumanCount(float64(t.Rows)), HumanBytes(float64(t.DiskBytes)), HumanBytes(float64(t.LakeBytes)),
		HumanCount(float64(t.Subscriptions)), HumanCount(float64(t.PreparedStatements)))
	m := st.Memory
	fmt.Fprintf(w, "memory: Go heap %s, cache %s, result streams %s of %s, engine limit %s\n\n",
		HumanBytes(float64(m.GoHeapBytes)), HumanBytes(float64(m.CacheBytes)), HumanBytes(float64(m.StreamUsedBytes)),
		HumanBytes(float64(m.StreamBudgetBytes)), HumanBytes(float64(m.EngineLimitBytes)))

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "TABLE\tROWS\tON DISK\tIN LAKE\tLAKE LAG\tINGEST\tSCANNED\tSUBSCRIBERS\tWRITES\t")
	for _, x := range st.Tables {
		lake, lag := "off", "-"
		if x.Datalake {
			lake, lag = HumanBytes(float64(x.LakeBytes)), "none"
			if x.LagRows > 0 {
				lag = HumanCount(float64(x.LagRows)) + " rows, " + HumanDuration(x.FreshnessLagSeconds)
			}
		}
		writes := "ok"
		if x.RefusingWrites != "" {
			writes = "refused: " + x.RefusingWrites
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t\n", x.Name, HumanCount(float64(x.Rows)), HumanBytes(float64(x.DiskBytes)), lake, lag,
			HumanRate(x.IngestRowsPerSecond, "rows"), HumanRate(x.ScanRowsPerSecond, "rows"), x.Subscriptions, writes)
	}
	if len(st.Tables) == 0 {
		fmt.Fprintln(tw, "no tables yet\t\t\t\t\t\t\t\t\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(st.Subscriptions) > 0 {
		fmt.Fprintln(w, "\nsubscriptions:")
		for _, s := range st.Subscriptions {
			fmt.Fprintf(w, "  %s buckets %s: %s rows read, lag %s rows, open %s\n", s.Table, joinInts(s.Buckets),
				HumanCount(float64(s.ReadRows)), HumanCount(float64(s.LagRows)), HumanDuration(s.AgeSeconds))
		}
	}
	if len(st.Errors) > 0 {
		fmt.Fprintln(w, "\nrecent errors:")
		for _, e := range st.Errors {
			where := e.RPC
			if e.Table != "" {
				where += " " + e.Table
			}
			fmt.Fprintf(w, "  %s %s %s: %s (request %s, %s, %s)\n", e.Time.Local().Format(time.TimeOnly), where, e.Code,
				e.Message, e.RequestID, e.Peer, HumanDuration(e.Seconds))
		}
	}
	for _, q := range st.Quarantined {
		fmt.Fprintf(w, "\nquarantined: %s (%s): %s\n", q.Table, q.Part, q.Reason)
	}
	for _, o := range st.Orphans {
		fmt.Fprintf(w, "\ndata directory without a table, kept: %s\n", o)
	}
	return nil
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// HumanBytes is n bytes in binary units: "512 B", "1.50 KiB", "12.3 MiB",
// "118 GiB".
func HumanBytes(n float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	i := 0
	for math.Abs(n) >= 1024 && i < len(units)-1 {
		n /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f B", n)
	}
	return sig3(n) + " " + units[i]
}

// HumanCount is a count: exact with thousands separators below 10,000,
// then "12.3k", "4.56M", "7.89G".
func HumanCount(n float64) string {
	a := math.Abs(n)
	if a < 10000 {
		s := strconv.FormatInt(int64(math.Round(a)), 10)
		for i := len(s) - 3; i > 0; i -= 3 {
			s = s[:i] + "," + s[i:]
		}
		if n < 0 {
			s = "-" + s
		}
		return s
	}
	for _, u := range []struct {
		d float64
		s string
	}{{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if a >= u.d {
			return sig3(n/u.d) + u.s
		}
	}
	return strconv.FormatFloat(n, 'f', 0, 64)
}

// HumanRate is a rate per second: "0 rows/s", "3.5 rows/s", "1.20k rows/s".
func HumanRate(n float64, unit string) string {
	switch {
	case n == 0:
		return "0 " + unit + "/s"
	case math.Abs(n) < 10:
		return fmt.Sprintf("%.1f %s/s", n, unit)
	}
	return HumanCount(n) + " " + unit + "/s"
}

// HumanDuration is seconds as a person reads them: "850 µs", "12 ms",
// "2.5 s", "28 s", "3 min 4 s", "2 h 5 min", "3 d 4 h".
func HumanDuration(s float64) string {
	switch {
	case s < 0.001:
		return fmt.Sprintf("%.0f µs", s*1e6)
	case s < 1:
		return fmt.Sprintf("%.0f ms", s*1000)
	case s < 10:
		return fmt.Sprintf("%.1f s", s)
	case s < 60:
		return fmt.Sprintf("%.0f s", math.Round(s))
	case s < 3600:
		return fmt.Sprintf("%d min %d s", int(s/60), int(math.Round(math.Mod(s, 60)))%60)
	case s < 86400:
		return fmt.Sprintf("%d h %d min", int(s/3600), int(math.Round(math.Mod(s, 3600)/60))%60)
	}
	return fmt.Sprintf("%d d %d h", int(s/86400), int(math.Round(math.Mod(s, 86400)/3600))%24)
}

// sig3 prints v with three significant digits (two decimals below 10, one
// below 100).
func sig3(v float64) string {
	switch a := math.Abs(v); {
	case a < 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case a < 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}
