package node

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lakestream/lakestream/catalog"
)

// fallbackMemory is what a percentage is of where the machine's memory
// cannot be read (not Linux).
const fallbackMemory = 4 << 30

// parseMemory reads a memory setting: a size ("512MiB", "4GB") or a
// percentage of total, the memory available to the process ("25%").
func parseMemory(v string, total int64) (int64, error) {
	v = strings.TrimSpace(v)
	if pct, ok := strings.CutSuffix(v, "%"); ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(pct), 64)
		if err != nil || f <= 0 || f > 100 || math.IsNaN(f) {
			return 0, fmt.Errorf("%q: want a size such as 512MiB or a percentage of memory from 0 to 100%%", v)
		}
		return int64(f / 100 * float64(total)), nil
	}
	n, err := catalog.ParseSize(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q: want a size such as 512MiB or a percentage of memory such as 25%%", v)
	}
	return n, nil
}

// availableMemory is the memory the process may use: the machine's
// physical memory, or its cgroup's limit when that is lower (a
// container's). Where neither can be read it is fallbackMemory.
func availableMemory() int64 {
	total := physicalMemory()
	if total <= 0 {
		total = fallbackMemory
	}
	if limit := cgroupLimit(); limit > 0 && limit < total {
		total = limit
	}
	return total
}

// physicalMemory reads MemTotal from /proc/meminfo; 0 if it cannot.
func physicalMemory() int64 {
	raw, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		if err != nil {
			return 0
		}
		return kb << 10
	}
	return 0
}

// cgroupLimit reads the memory limit of the process's cgroup (v2, then
// v1); 0 when there is none or it cannot be read.
func cgroupLimit() int64 {
	var paths []string
	if raw, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		for _, line := range strings.Split(string(raw), "\n") {
			if rel, ok := strings.CutPrefix(line, "0::"); ok {
				paths = append(paths, filepath.Join("/sys/fs/cgroup", rel, "memory.max"))
			}
		}
	}
	paths = append(paths, "/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		v := strings.TrimSpace(string(raw))
		if v == "max" {
			return 0
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 || n >= 1<<60 { // v1 reports "no limit" as a huge number
			return 0
		}
		return n
	}
	return 0
}
