package cilog

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// cidiffDir holds CiDiff's labelled breakages (../shared/data/SOURCES.md).
const cidiffDir = "../../../shared/data/cilogs/cidiff"

// groundtruth reads a CiDiff groundtruth file: its mode and its labelled
// error lines ("E a-b" or "E n").
func groundtruth(t *testing.T, path string) (string, map[int]bool, [][2]int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	set := map[int]bool{}
	var ranges [][2]int
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) != 2 || f[0] != "E" {
			continue
		}
		a, bs, _ := strings.Cut(f[1], "-")
		lo, _ := strconv.Atoi(a)
		hi := lo
		if bs != "" {
			hi, _ = strconv.Atoi(bs)
		}
		for i := lo; i <= hi; i++ {
			set[i] = true
		}
		ranges = append(ranges, [2]int{lo, hi})
	}
	return strings.TrimSpace(lines[0]), set, ranges
}

// cidiffCauses are the causes of CiDiff's breakages, read off the logs.
var cidiffCauses = map[string]string{
	"assertfixer_1320": CauseInfra, "astor_1260": CauseCompile, "casper_1774": CauseEnvironment,
	"cidiff_11": CauseTest, "cidiff_57": CauseTest, "cocospoon_1754": CauseEnvironment,
	"commonscodec_2463": CauseLint, "cv_45": CauseInfra, "guava_1947": CauseCompile,
	"gumtreespoonastdiff_2017": CauseInfra, "jimfs_1890": CauseCompile, "jperturb_1634": CauseEnvironment,
	"metamutator_1765": CauseEnvironment, "mimecraft_2316": CauseDependency, "nopol_1590": CauseInfra,
	"pushcommentgithub_173": CauseUnknown, "sorald_445": CauseInfra, "spooncontrolflow_805": CauseDependency,
}

// rawLines splits a file as CiDiff does: "\n", "\r\n" and a lone "\r" each
// end a line.
func rawLines(b []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		i := bytes.IndexAny(data, "\r\n")
		if i < 0 {
			if atEOF && len(data) > 0 {
				return len(data), data, nil
			}
			return 0, nil, nil
		}
		if data[i] == '\r' {
			if i+1 < len(data) {
				if data[i+1] == '\n' {
					return i + 2, data[:i], nil
				}
				return i + 1, data[:i], nil
			}
			if !atEOF {
				return 0, nil, nil
			}
		}
		return i + 1, data[:i], nil
	})
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

var keywordRE = regexp.MustCompile(`(?i)error|fail|exception|fatal`)

type score struct{ labelled, covered, flagged, inside, ranges, hit int }

// addRanges counts the labelled ranges with at least one flagged line.
func (s *score) addRanges(rs [][2]int, flagged map[int]bool) {
	for _, r := range rs {
		s.ranges++
		for i := r[0]; i <= r[1]; i++ {
			if flagged[i] {
				s.hit++
				break
			}
		}
	}
}

func (s score) rangeCoverage() float64 { return float64(s.hit) / float64(max(1, s.ranges)) }

func (s *score) add(labels, flagged map[int]bool) {
	s.labelled += len(labels)
	s.flagged += len(flagged)
	for l := range flagged {
		if labels[l] {
			s.inside++
		}
	}
	for l := range labels {
		if flagged[l] {
			s.covered++
		}
	}
}

func (s score) coverage() float64  { return float64(s.covered) / float64(max(1, s.labelled)) }
func (s score) precision() float64 { return float64(s.inside) / float64(max(1, s.flagged)) }

// TestCiDiffScore scores the parser with CiDiff's measure on its labelled
// breakages: the share of labelled error lines the diagnostics' line
// ranges cover, and the share of flagged lines inside the labels, beside a
// keyword baseline (lines matching error|fail|exception|fatal).
func TestCiDiffScore(t *testing.T) {
	cases, _ := filepath.Glob(filepath.Join(cidiffDir, "*", "fail.log"))
	if len(cases) == 0 {
		t.Skip("no CiDiff data at " + cidiffDir)
	}
	sort.Strings(cases)
	var ours, base score
	for _, logPath := range cases {
		dir := filepath.Dir(logPath)
		mode, labels, ranges := groundtruth(t, filepath.Join(dir, "groundtruth"))
		raw, err := os.ReadFile(logPath)
		if err != nil {
			t.Fatal(err)
		}
		lines := rawLines(raw)
		rep, err := ParseFile(logPath)
		if err != nil {
			t.Fatalf("%s: %v", logPath, err)
		}
		if rep.Lines != len(lines) {
			t.Errorf("%s: %d lines, CiDiff counts %d", dir, rep.Lines, len(lines))
		}
		flagged := map[int]bool{}
		for _, d := range rep.Diagnostics {
			rs := d.Ranges
			if len(rs) == 0 {
				rs = [][2]int{d.LogLines}
			}
			for _, r := range rs {
				for i := r[0]; i <= r[1]; i++ {
					flagged[i] = true
				}
			}
		}
		kw := map[int]bool{}
		for i, l := range lines {
			if keywordRE.MatchString(l) {
				kw[i+1] = true
			}
		}
		var one, oneBase score
		one.add(labels, flagged)
		oneBase.add(labels, kw)
		ours.add(labels, flagged)
		base.add(labels, kw)
		ours.addRanges(ranges, flagged)
		base.addRanges(ranges, kw)
		if want := cidiffCauses[filepath.Base(dir)]; rep.Cause != want {
			t.Errorf("%s: cause %s, want %s", filepath.Base(dir), rep.Cause, want)
		}
		t.Logf("%-26s %-11s ci=%-14s cause=%-11s diags=%3d coverage %.2f precision %.2f | keywords %.2f %.2f",
			filepath.Base(dir), mode, rep.CI, rep.Cause, len(rep.Diagnostics), one.coverage(), one.precision(), oneBase.coverage(), oneBase.precision())
	}
	t.Logf("CiDiff (%d logs, %d labelled lines in %d ranges): lines covered %.3f, ranges hit %.3f, flagged lines inside labels %.3f; keyword baseline %.3f, %.3f, %.3f",
		len(cases), ours.labelled, ours.ranges, ours.coverage(), ours.rangeCoverage(), ours.precision(), base.coverage(), base.rangeCoverage(), base.precision())
	if ours.rangeCoverage() < base.rangeCoverage() {
		t.Errorf("ranges hit %.3f < the keyword baseline's %.3f", ours.rangeCoverage(), base.rangeCoverage())
	}
	if ours.coverage() < 0.9 {
		t.Errorf("coverage %.3f < 0.9", ours.coverage())
	}
	if ours.precision() < 0.7 {
		t.Errorf("precision %.3f < 0.7", ours.precision())
	}
}
