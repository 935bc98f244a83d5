package cilog

import "testing"

// TestStreamMemoryBounded parses generated logs of 8 and 64 MiB (of long
// lines, so that it stays quick under the race detector): the live heap is
// bounded by a chunk, not by the log, so the larger log may not need more
// of it (the 1 GiB figure is `murphy bench cilog`).
func TestStreamMemoryBounded(t *testing.T) {
	var peaks []uint64
	for _, size := range []int64{8 << 20, 64 << 20} {
		r, err := streamBench(size, 2000)
		if err != nil {
			t.Fatal(err)
		}
		t.Log(r)
		if r.Diagnostics == 0 || r.Lines < int(size/4096) {
			t.Fatalf("parsed %d lines, %d diagnostics", r.Lines, r.Diagnostics)
		}
		peaks = append(peaks, r.PeakHeapBytes-min(r.PeakHeapBytes, r.BaseHeapBytes))
	}
	if peaks[1] > peaks[0]+16<<20 || peaks[1] > 48<<20 {
		t.Errorf("live heap %d MiB for 8 MiB of log, %d MiB for 64 MiB", peaks[0]>>20, peaks[1]>>20)
	}
}
