package diag

import (
	"net/url"
	"path"
	"strings"
)

// RelPath returns file relative to the workspace root: "file://" URIs are
// decoded, "./" and redundant separators dropped, and an absolute path
// under root made relative. Paths outside root (system headers, "../x"),
// pseudo-files ("<stdin>", "<frozen ...>") and Windows paths are kept as
// given, cleaned.
func RelPath(root, file string) string {
	return joinRel(root, "", file)
}

// joinRel is RelPath for a file named relative to dir (make's directory;
// "" is the build's working directory, the root).
func joinRel(root, dir, file string) string {
	f := strings.TrimSpace(file)
	f = strings.Trim(f, "\"'`‘’")
	if f == "" {
		return ""
	}
	if strings.HasPrefix(f, "<") || isWindowsPath(f) {
		return f
	}
	if strings.HasPrefix(f, "file:") {
		if u, err := url.Parse(f); err == nil && u.Path != "" {
			f = u.Path
		} else {
			f = strings.TrimPrefix(strings.TrimPrefix(f, "file:"), "//")
		}
	}
	if !path.IsAbs(f) && dir != "" && !isWindowsPath(dir) {
		f = path.Join(dir, f)
	}
	f = path.Clean(f)
	r := cleanRoot(root)
	if r != "" && path.IsAbs(f) {
		if f == r {
			return "."
		}
		if strings.HasPrefix(f, r+"/") {
			return f[len(r)+1:]
		}
	}
	return f
}

// cleanRoot returns root cleaned, "" when it names no directory to strip.
func cleanRoot(root string) string {
	if strings.TrimSpace(root) == "" {
		return ""
	}
	r := path.Clean(strings.TrimSpace(root))
	if r == "." || r == "/" {
		return ""
	}
	return r
}

func isWindowsPath(f string) bool {
	if len(f) >= 3 && f[1] == ':' && (f[2] == '\\' || f[2] == '/') &&
		(f[0] >= 'a' && f[0] <= 'z' || f[0] >= 'A' && f[0] <= 'Z') {
		return true
	}
	return strings.HasPrefix(f, `\\`)
}

// pathParts splits a slash path into its components, without "." and
// leading "/" (for suffix comparison of relative and absolute forms).
func pathParts(f string) []string {
	f = strings.ReplaceAll(f, `\`, "/")
	if strings.HasPrefix(f, "file:") {
		if u, err := url.Parse(f); err == nil && u.Path != "" {
			f = u.Path
		}
	}
	f = path.Clean(f)
	var out []string
	for _, p := range strings.Split(f, "/") {
		if p != "" && p != "." {
			out = append(out, p)
		}
	}
	return out
}

// sameFile reports whether two file names can name the same file: the
// components of one are a suffix of the other's ("src/a.c",
// "/work/src/a.c", "a.c").
func sameFile(a, b []string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	if len(a) == 0 {
		return len(b) == 0
	}
	off := len(b) - len(a)
	for i := range a {
		if a[i] != b[off+i] {
			return false
		}
	}
	return true
}
