//go:build !race

package columnarlog_test

// raceEnabled says that the race detector is on: tests that only need
// coverage do less under it.
const raceEnabled = false
