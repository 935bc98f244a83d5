package patch

import (
	"errors"
	"testing"
)

func TestApplyFileOptions(t *testing.T) {
	t.Parallel()
	src := "a\nb  c\nd\ne\nf\ng\nh\n"
	cases := []struct {
		name, diff, want string
		opt              Options
		code             string // the error's code when it fails
	}{
		{"exact", "--- a/x\n+++ b/x\n@@ -2,3 +2,3 @@\n b  c\n-d\n+D\n e\n", "a\nb  c\nD\ne\nf\ng\nh\n", Options{}, ""},
		{"offset", "--- a/x\n+++ b/x\n@@ -12,3 +12,3 @@\n b  c\n-d\n+D\n e\n", "a\nb  c\nD\ne\nf\ng\nh\n", Options{}, ""},
		{"white space differs", "--- a/x\n+++ b/x\n@@ -2,3 +2,3 @@\n b c \n-d\n+D\n e\n", "", Options{Fuzz: -1}, CodeNoMatch},
		{"ignore space", "--- a/x\n+++ b/x\n@@ -2,3 +2,3 @@\n b c \n-d\n+D\n e\n", "a\nb  c\nD\ne\nf\ng\nh\n", Options{Fuzz: -1, IgnoreSpace: true}, ""},
		{"out of order", "--- a/x\n+++ b/x\n@@ -6,1 +6,1 @@\n-f\n+F\n@@ -1,1 +1,1 @@\n-a\n+A\n", "", Options{}, CodeNoMatch},
		{"any order", "--- a/x\n+++ b/x\n@@ -6,1 +6,1 @@\n-f\n+F\n@@ -1,1 +1,1 @@\n-a\n+A\n", "A\nb  c\nd\ne\nF\ng\nh\n", Options{AnyOrder: true}, ""},
		{"insertion after a line", "--- a/x\n+++ b/x\n@@ -3,0 +4 @@\n+new\n", "a\nb  c\nd\nnew\ne\nf\ng\nh\n", Options{}, ""},
		{"no match", "--- a/x\n+++ b/x\n@@ -2,1 +2,1 @@\n-zzz\n+y\n", "", Options{}, CodeNoMatch},
	}
	for _, tc := range cases {
		fs := parseOne(t, tc.diff)
		got, err := ApplyFile([]byte(src), fs[0], tc.opt)
		if tc.code != "" {
			var pe *Error
			if !errors.As(err, &pe) || pe.Code != tc.code || pe.Hunk == 0 || pe.Path != "x" {
				t.Errorf("%s: %v, want a %s error", tc.name, err, tc.code)
			}
			continue
		}
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: %v\n%q\nwant\n%q", tc.name, err, got, tc.want)
		}
	}
}
