package emit

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Range is the span of source offsets [First, Last] of one credited
// partition that a batch covers. A batch's id is derived from its Range
// alone, so a batch rebuilt after a restart from the same records has the
// same id, and batches of one partition never share an offset.
type Range struct {
	Topic     string
	Partition int
	First     int64
	Last      int64
}

// BatchID is the id of the batch covering r: "<topic>:<partition>:<first>-<last>".
func (r Range) BatchID() string {
	return fmt.Sprintf("%s:%d:%d-%d", r.Topic, r.Partition, r.First, r.Last)
}

func (r Range) String() string { return r.BatchID() }

// ParseBatchID parses an id made by Range.BatchID.
func ParseBatchID(id string) (Range, error) {
	bad := func(why string) (Range, error) {
		return Range{}, fmt.Errorf("emit: batch id %q: %s", id, why)
	}
	i := strings.LastIndexByte(id, ':')
	if i <= 0 {
		return bad("no offsets")
	}
	offs := id[i+1:]
	j := strings.LastIndexByte(id[:i], ':')
	if j <= 0 {
		return bad("no partition")
	}
	p, err := strconv.Atoi(id[j+1 : i])
	if err != nil || p < 0 {
		return bad("bad partition")
	}
	first, last, ok := strings.Cut(offs, "-")
	if !ok {
		return bad("offsets are not first-last")
	}
	f, err1 := strconv.ParseInt(first, 10, 64)
	l, err2 := strconv.ParseInt(last, 10, 64)
	if err1 != nil || err2 != nil || f < 0 || l < f {
		return bad("bad offsets")
	}
	return Range{Topic: id[:j], Partition: p, First: f, Last: l}, nil
}

// File formats.
const (
	FormatIPC     = "ipc"
	FormatParquet = "parquet"
)

// fileExt is the file name extension of each format.
func fileExt(format string) string {
	if format == FormatParquet {
		return ".parquet"
	}
	return ".arrow"
}

// FileName is the name of a complete file of the given format holding the
// batches of r's partition from r.First through r.Last. Offsets are zero
// padded so that names sort in offset order.
func FileName(r Range, format string) string {
	return fmt.Sprintf("%s-p%05d-%020d-%020d%s", r.Topic, r.Partition, r.First, r.Last, fileExt(format))
}

// tempFileName is where a file is written until it is complete. It starts
// with a dot and ends in .tmp, so readers listing *.arrow / *.parquet never
// see it.
func tempFileName(topic string, partition int, first int64, format string) string {
	return fmt.Sprintf(".%s-p%05d-%020d%s.tmp", topic, partition, first, fileExt(format))
}

var fileNameRE = regexp.MustCompile(`^(.+)-p(\d{5,})-(\d{20})-(\d{20})\.(arrow|parquet)$`)

// ParseFileName parses a name made by FileName.
func ParseFileName(name string) (r Range, format string, ok bool) {
	m := fileNameRE.FindStringSubmatch(name)
	if m == nil {
		return Range{}, "", false
	}
	p, err := strconv.Atoi(m[2])
	if err != nil {
		return Range{}, "", false
	}
	f, err1 := strconv.ParseInt(m[3], 10, 64)
	l, err2 := strconv.ParseInt(m[4], 10, 64)
	if err1 != nil || err2 != nil || l < f {
		return Range{}, "", false
	}
	format = FormatIPC
	if m[5] == "parquet" {
		format = FormatParquet
	}
	return Range{Topic: m[1], Partition: p, First: f, Last: l}, format, true
}
