package compilefix

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
)

// normaliseELF digests the object files a C build left (its executables
// when it left no objects). Every changed .c/.cc/.cpp source must have an
// object of its name when there are objects.
func normaliseELF(dir string, _ []byte, sources []string) (map[string]string, string, error) {
	files, err := readArtifacts(dir, func(_ string, head []byte) bool { return bytes.HasPrefix(head, []byte(elf.ELFMAG)) })
	if err != nil {
		return nil, "", err
	}
	objects, executables := map[string]string{}, map[string]string{}
	for _, rel := range sortedKeys(files) {
		d, typ, err := elfDigest(files[rel])
		if err != nil {
			return nil, fmt.Sprintf("%s: %v", rel, err), nil
		}
		if typ == elf.ET_REL {
			objects[rel] = d
		} else {
			executables[rel] = d
		}
	}
	if len(objects) == 0 {
		if len(executables) == 0 {
			return nil, "the build left no object file or executable", nil
		}
		return executables, "", nil
	}
	stems := map[string]bool{}
	for rel := range objects {
		stems[stem(rel)] = true
	}
	for _, s := range sources {
		if hasExt(s, ".c", ".cc", ".cpp", ".cxx") && !stems[stem(s)] {
			return nil, "no object file of " + s, nil
		}
	}
	return objects, "", nil
}

// elfDigest digests what an ELF file loads and links: every allocated
// section but notes (name, type, flags, alignment, size, contents), the
// relocations of those sections (offset, type, addend, symbol name) and
// the symbols (name, type, binding, section, value, size) but file and
// section symbols. Debug sections (.debug_*), comments and notes, where
// line numbers, file names and build ids live, are left out.
func elfDigest(b []byte) (digest string, typ elf.Type, err error) {
	defer func() {
		if r := recover(); r != nil { // debug/elf on hostile input
			err = fmt.Errorf("malformed ELF file: %v", r)
		}
	}()
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	fmt.Fprintf(h, "elf %v %v %v\n", f.Class, f.Machine, f.Type)
	kept := map[int]bool{}
	for i, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC == 0 || s.Type == elf.SHT_NOTE {
			continue
		}
		kept[i] = true
		fmt.Fprintf(h, "section %s %v %v %d %d\n", s.Name, s.Type, s.Flags&^elf.SHF_INFO_LINK, s.Addralign, s.Size)
		if s.Type != elf.SHT_NOBITS {
			data, err := s.Data()
			if err != nil {
				return "", 0, fmt.Errorf("section %s: %w", s.Name, err)
			}
			h.Write(data)
		}
	}
	syms, err := f.Symbols()
	if err != nil && err != elf.ErrNoSymbols {
		return "", 0, err
	}
	names := make([]string, len(syms))
	for i, s := range syms {
		names[i] = s.Name
		if st := elf.ST_TYPE(s.Info); st == elf.STT_FILE || st == elf.STT_SECTION {
			continue
		}
		sec := "abs"
		if int(s.Section) < len(f.Sections) {
			sec = f.Sections[s.Section].Name
		}
		fmt.Fprintf(h, "sym %s %v %v %s %d %d\n", s.Name, elf.ST_TYPE(s.Info), elf.ST_BIND(s.Info), sec, s.Value, s.Size)
	}
	for _, s := range f.Sections {
		if (s.Type != elf.SHT_RELA && s.Type != elf.SHT_REL) || !kept[int(s.Info)] {
			continue
		}
		rels, err := relocations(f, s, syms, names)
		if err != nil {
			return "", 0, fmt.Errorf("section %s: %w", s.Name, err)
		}
		fmt.Fprintf(h, "rel %s\n%s", f.Sections[s.Info].Name, rels)
	}
	return hex.EncodeToString(h.Sum(nil)), f.Type, nil
}

// relocations renders a relocation section with symbol names (a section
// symbol by its section's name), sorted by offset.
func relocations(f *elf.File, s *elf.Section, syms []elf.Symbol, names []string) (string, error) {
	data, err := s.Data()
	if err != nil {
		return "", err
	}
	type rel struct {
		off    uint64
		typ    uint32
		sym    uint32
		addend int64
	}
	var rs []rel
	bo := f.ByteOrder
	switch {
	case f.Class == elf.ELFCLASS64 && s.Type == elf.SHT_RELA:
		for i := 0; i+24 <= len(data); i += 24 {
			info := bo.Uint64(data[i+8:])
			rs = append(rs, rel{bo.Uint64(data[i:]), uint32(info), uint32(info >> 32), int64(bo.Uint64(data[i+16:]))})
		}
	case f.Class == elf.ELFCLASS64:
		for i := 0; i+16 <= len(data); i += 16 {
			info := bo.Uint64(data[i+8:])
			rs = append(rs, rel{bo.Uint64(data[i:]), uint32(info), uint32(info >> 32), 0})
		}
	case s.Type == elf.SHT_RELA:
		for i := 0; i+12 <= len(data); i += 12 {
			info := bo.Uint32(data[i+4:])
			rs = append(rs, rel{uint64(bo.Uint32(data[i:])), info & 0xff, info >> 8, int64(int32(bo.Uint32(data[i+8:])))})
		}
	default:
		for i := 0; i+8 <= len(data); i += 8 {
			info := bo.Uint32(data[i+4:])
			rs = append(rs, rel{uint64(bo.Uint32(data[i:])), info & 0xff, info >> 8, 0})
		}
	}
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].off < rs[j].off })
	var b strings.Builder
	for _, r := range rs {
		name := ""
		if r.sym > 0 && int(r.sym)-1 < len(syms) { // Symbols() drops the null symbol 0
			sym := syms[r.sym-1]
			name = names[r.sym-1]
			if elf.ST_TYPE(sym.Info) == elf.STT_SECTION && int(sym.Section) < len(f.Sections) {
				name = "section:" + f.Sections[sym.Section].Name
			}
		}
		fmt.Fprintf(&b, "%d %d %s %d\n", r.off, r.typ, name, r.addend)
	}
	return b.String(), nil
}
