package cilog

import "testing"

// TestStreamMemoryBounded parses a 64 MiB generated log: the live heap
// stays bounded by a chunk, not by the log (the 1 GiB figure is
// `murphy bench cilog`).
func TestStreamMemoryBounded(t *testing.T) {
	size := int64(64 << 20)
	if testing.Short() {
		size = 8 << 20
	}
	r, err := StreamBench(size)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(r)
	if r.Diagnostics == 0 || r.Lines < int(size/200) {
		t.Fatalf("parsed %d lines, %d diagnostics", r.Lines, r.Diagnostics)
	}
	if live := r.PeakHeapBytes - min(r.PeakHeapBytes, r.BaseHeapBytes); live > 48<<20 {
		t.Errorf("live heap grew by %d MiB parsing a %d MiB log", live>>20, size>>20)
	}
}
