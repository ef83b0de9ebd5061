package bench

import (
	"slices"
)

// Stat summarises the runs of one figure.
type Stat struct {
	Median float64   `json:"median"`
	Min    float64   `json:"min"`
	Max    float64   `json:"max"`
	Runs   []float64 `json:"runs"`
}

// summarize is the median (the mean of the middle two for an even count),
// min and max of runs; the zero Stat for none.
func summarize(runs []float64) Stat {
	if len(runs) == 0 {
		return Stat{}
	}
	s := slices.Clone(runs)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Stat{Median: med, Min: s[0], Max: s[len(s)-1], Runs: slices.Clone(runs)}
}

// ratios divides run by run: runs are measured in pairs, interleaved, so
// that drift during the benchmark (thermal, page cache, other load) falls
// on both sides of each ratio.
func ratios(num, den []float64) []float64 {
	out := make([]float64, 0, len(num))
	for i := range min(len(num), len(den)) {
		if den[i] != 0 {
			out = append(out, num[i]/den[i])
		}
	}
	return out
}
