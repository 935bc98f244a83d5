package compilefix

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
)

// normaliseClasses digests the class files a Java build left. Every
// changed X.java must have produced an X.class.
func normaliseClasses(dir string, _ []byte, sources []string) (map[string]string, string, error) {
	files, err := readArtifacts(dir, func(rel string, head []byte) bool {
		return hasExt(rel, ".class") && bytes.HasPrefix(head, []byte{0xCA, 0xFE, 0xBA, 0xBE})
	})
	if err != nil {
		return nil, "", err
	}
	out := map[string]string{}
	stems := map[string]bool{}
	for _, rel := range sortedKeys(files) {
		b, err := StripClassDebug(files[rel])
		if err != nil {
			return nil, fmt.Sprintf("%s: %v", rel, err), nil
		}
		sum := sha256.Sum256(b)
		out[rel] = hex.EncodeToString(sum[:])
		stems[stem(rel)] = true
	}
	if len(out) == 0 {
		return nil, "the build left no class file", nil
	}
	for _, s := range sources {
		if hasExt(s, ".java") && !stems[stem(s)] {
			return nil, "no class file of " + s, nil
		}
	}
	return out, "", nil
}

// strippedAttributes are the class-file attributes that hold positions and
// file names, not code.
var strippedAttributes = map[string]bool{"LineNumberTable": true, "SourceFile": true, "SourceDebugExtension": true}

// StripClassDebug returns a class file without its LineNumberTable,
// SourceFile and SourceDebugExtension attributes (JVMS §4.7), at every
// level (class, fields, methods, the attributes of Code). The constant
// pool is kept as it is: javac builds it in the order the code refers to
// its entries, not by line.
func StripClassDebug(b []byte) ([]byte, error) {
	r := &classReader{b: b}
	var out bytes.Buffer
	out.Write(r.bytes(8)) // magic, minor, major
	cpStart := r.pos
	n := int(r.u2())
	utf8 := map[int]string{}
	for i := 1; i < n && r.err == nil; i++ {
		tag := r.u1()
		switch tag {
		case 1:
			l := int(r.u2())
			utf8[i] = string(r.bytes(l))
		case 3, 4, 9, 10, 11, 12, 17, 18:
			r.bytes(4)
		case 5, 6:
			r.bytes(8)
			i++ // a long or double takes two entries
		case 7, 8, 16, 19, 20:
			r.bytes(2)
		case 15:
			r.bytes(3)
		default:
			r.fail(fmt.Errorf("constant %d: unknown tag %d", i, tag))
		}
	}
	out.Write(r.b[cpStart:min(r.pos, len(r.b))])
	out.Write(r.bytes(6)) // access flags, this, super
	ifaces := r.u2()
	binary.Write(&out, binary.BigEndian, ifaces) //nolint:errcheck // a bytes.Buffer
	out.Write(r.bytes(2 * int(ifaces)))
	for range 2 { // fields, then methods
		count := r.u2()
		binary.Write(&out, binary.BigEndian, count) //nolint:errcheck
		for j := 0; j < int(count) && r.err == nil; j++ {
			out.Write(r.bytes(6)) // access, name, descriptor
			r.attributes(&out, utf8)
		}
	}
	r.attributes(&out, utf8)
	if r.err == nil && r.pos != len(r.b) {
		r.err = fmt.Errorf("%d bytes after the class", len(r.b)-r.pos)
	}
	if r.err != nil {
		return nil, r.err
	}
	return out.Bytes(), nil
}

type classReader struct {
	b   []byte
	pos int
	err error
}

var errTruncated = errors.New("truncated class file")

func (r *classReader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *classReader) bytes(n int) []byte {
	if r.err != nil || n < 0 || r.pos+n > len(r.b) {
		r.fail(errTruncated)
		return nil
	}
	s := r.b[r.pos : r.pos+n]
	r.pos += n
	return s
}

func (r *classReader) u1() byte {
	if s := r.bytes(1); s != nil {
		return s[0]
	}
	return 0
}

func (r *classReader) u2() uint16 {
	if s := r.bytes(2); s != nil {
		return binary.BigEndian.Uint16(s)
	}
	return 0
}

func (r *classReader) u4() uint32 {
	if s := r.bytes(4); s != nil {
		return binary.BigEndian.Uint32(s)
	}
	return 0
}

// attributes copies an attribute table to out without the stripped
// attributes; a Code attribute's own table is stripped too.
func (r *classReader) attributes(out *bytes.Buffer, utf8 map[int]string) {
	count := int(r.u2())
	var kept [][]byte
	for i := 0; i < count && r.err == nil; i++ {
		nameIdx := r.u2()
		length := int(r.u4())
		body := r.bytes(length)
		name, ok := utf8[int(nameIdx)]
		if !ok {
			r.fail(fmt.Errorf("attribute name %d is not a UTF8 constant", nameIdx))
			return
		}
		if strippedAttributes[name] {
			continue
		}
		if name == "Code" {
			body = stripCode(body, utf8, r)
		}
		var a bytes.Buffer
		binary.Write(&a, binary.BigEndian, nameIdx)           //nolint:errcheck
		binary.Write(&a, binary.BigEndian, uint32(len(body))) //nolint:errcheck
		a.Write(body)
		kept = append(kept, a.Bytes())
	}
	binary.Write(out, binary.BigEndian, uint16(len(kept))) //nolint:errcheck
	for _, a := range kept {
		out.Write(a)
	}
}

// stripCode strips a Code attribute's body (JVMS §4.7.3).
func stripCode(body []byte, utf8 map[int]string, parent *classReader) []byte {
	r := &classReader{b: body}
	var out bytes.Buffer
	out.Write(r.bytes(4)) // max_stack, max_locals
	codeLen := r.u4()
	binary.Write(&out, binary.BigEndian, codeLen) //nolint:errcheck
	out.Write(r.bytes(int(codeLen)))
	exc := r.u2()
	binary.Write(&out, binary.BigEndian, exc) //nolint:errcheck
	out.Write(r.bytes(8 * int(exc)))
	r.attributes(&out, utf8)
	if r.err == nil && r.pos != len(body) {
		r.err = errors.New("bytes after a Code attribute")
	}
	if r.err != nil {
		parent.fail(fmt.Errorf("attribute Code: %w", r.err))
	}
	return out.Bytes()
}
