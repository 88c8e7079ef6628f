package gguf

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/sluice-ml/sluice/sdk/localpath"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// Metadata keys of a split set, as gguf-split writes them.
const (
	KeySplitNo           = "split.no"            // u16, 0-based index of the shard
	KeySplitCount        = "split.count"         // u16, number of shards (0 in a merged file)
	KeySplitTensorsCount = "split.tensors.count" // i32, tensors across all shards
)

// IsSplitKey reports whether key describes a split set's layout rather than
// the model; readers drop these keys and writers set their own.
func IsSplitKey(key string) bool {
	return key == KeySplitNo || key == KeySplitCount || key == KeySplitTensorsCount
}

// SplitPath returns the name of shard no (1-based) of count for a prefix, as
// llama.cpp's llama_split_path: PREFIX-%05d-of-%05d.gguf.
func SplitPath(prefix string, no, count int) string {
	return fmt.Sprintf("%s-%05d-of-%05d.gguf", prefix, no, count)
}

var splitName = regexp.MustCompile(`^(.*)-([0-9]{5,})-of-([0-9]{5,})\.gguf$`)

// ParseSplitPath splits a shard name into its prefix, 1-based index and count.
func ParseSplitPath(path string) (prefix string, no, count int, ok bool) {
	m := splitName.FindStringSubmatch(path)
	if m == nil {
		return "", 0, 0, false
	}
	no, err1 := strconv.Atoi(m[2])
	count, err2 := strconv.Atoi(m[3])
	if err1 != nil || err2 != nil || no < 1 || no > count || SplitPath(m[1], no, count) != path {
		return "", 0, 0, false
	}
	return m[1], no, count, true
}

// Set is one GGUF model stored in one file or in a split set of shards.
type Set struct {
	// Files are the shards in order (one for an unsplit file).
	Files []*File
	// Paths are the shards' paths.
	Paths []string
	fhs   []*os.File
}

// Close closes every shard.
func (s *Set) Close() error {
	var first error
	for _, fh := range s.fhs {
		if err := fh.Close(); err != nil && first == nil {
			first = err
		}
	}
	s.fhs = nil
	return first
}

// splitInfo reads a shard's split keys; count 0 means "not a split shard".
func splitInfo(f *File) (no, count int, total int64, err error) {
	cv, ok := f.Metadata.Get(KeySplitCount)
	if !ok {
		return 0, 0, 0, nil
	}
	c, ok := cv.Uint()
	if !ok || c > 1<<16 {
		return 0, 0, 0, fmt.Errorf("%s: %s is %v, not a shard count", f.Name, KeySplitCount, cv)
	}
	if c <= 1 {
		return 0, int(c), 0, nil
	}
	nv, ok := f.Metadata.Get(KeySplitNo)
	n, ok2 := nv.Uint()
	if !ok || !ok2 || n >= c {
		return 0, 0, 0, fmt.Errorf("%s: %s is %v; shard of a set of %d needs 0..%d", f.Name, KeySplitNo, nv, c, c-1)
	}
	tv, ok := f.Metadata.Get(KeySplitTensorsCount)
	t, ok2 := tv.Int()
	if !ok || !ok2 || t < 0 {
		return 0, 0, 0, fmt.Errorf("%s: shard %d of %d has no valid %s (%v)", f.Name, n+1, c, KeySplitTensorsCount, tv)
	}
	return int(n), int(c), t, nil
}

// OpenSet opens the GGUF model at path. When path is any shard of a split set
// (split.count > 1), every shard is opened and checked: names
// PREFIX-%05d-of-%05d.gguf, matching split.no, split.count and
// split.tensors.count, and no tensor in two shards. A missing shard, or a
// shard from another set, is an error that names it.
func OpenSet(path string) (*Set, error) {
	f, fh, err := OpenFile(path)
	if err != nil {
		return nil, err
	}
	s := &Set{Files: []*File{f}, Paths: []string{path}, fhs: []*os.File{fh}}
	no, count, total, err := splitInfo(f)
	if err != nil || count <= 1 {
		if err != nil {
			s.Close()
			return nil, &formatErr{err}
		}
		return s, nil
	}
	prefix, pno, pcount, ok := ParseSplitPath(path)
	if !ok || pno != no+1 || pcount != count {
		s.Close()
		want := SplitPath("PREFIX", no+1, count)
		return nil, &formatErr{fmt.Errorf("%s is shard %d of %d of a split set (split.no %d), so its name must end like %s for the other shards to be found", path, no+1, count, no, filepath.Base(want)[len("PREFIX"):])}
	}
	s.Files = make([]*File, count)
	s.Paths = make([]string, count)
	s.Files[no], s.Paths[no] = f, path
	for i := 0; i < count; i++ {
		if i == no {
			continue
		}
		p := SplitPath(prefix, i+1, count)
		// A sibling must not lead out of the directory through a link
		// (links inside a Hugging Face cache repository are fine).
		if err := localpath.Inside(filepath.Dir(path), p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.Close()
			if plugin.IsBadInput(err) {
				return nil, &formatErr{fmt.Errorf("split set %s: shard %d of %d: %w", path, i+1, count, err)}
			}
			return nil, err
		}
		sf, sfh, err := OpenFile(p)
		if err != nil {
			s.Close()
			if errors.Is(err, fs.ErrNotExist) {
				return nil, &formatErr{fmt.Errorf("split set %s: shard %d of %d is missing: %s does not exist", path, i+1, count, p)}
			}
			return nil, err
		}
		s.fhs = append(s.fhs, sfh)
		s.Files[i], s.Paths[i] = sf, p
		sno, scount, stotal, err := splitInfo(sf)
		if err != nil {
			s.Close()
			return nil, &formatErr{err}
		}
		if scount != count || sno != i || stotal != total {
			s.Close()
			return nil, &formatErr{fmt.Errorf("%s is not shard %d of the set of %s: it says shard %d of %d with %d tensors in all, the set needs shard %d of %d with %d (a shard from another set?)",
				p, i+1, path, sno+1, scount, stotal, i+1, count, total)}
		}
	}
	seen := map[string]string{}
	n := int64(0)
	for i, sf := range s.Files {
		for _, t := range sf.Tensors {
			if other, dup := seen[t.Name]; dup {
				s.Close()
				return nil, &formatErr{fmt.Errorf("split set %s: tensor %q is in both %s and %s (shards from different sets?)", path, t.Name, other, s.Paths[i])}
			}
			seen[t.Name] = s.Paths[i]
			n++
		}
	}
	if n != total {
		s.Close()
		return nil, &formatErr{fmt.Errorf("split set %s: the %d shards hold %d tensors but split.tensors.count says %d", path, count, n, total)}
	}
	return s, nil
}

// formatErr marks a split-set inconsistency as bad input.
type formatErr struct{ err error }

func (e *formatErr) Error() string  { return e.err.Error() }
func (e *formatErr) Unwrap() error  { return e.err }
func (e *formatErr) BadInput() bool { return true }

// Metadata returns the model's metadata: the first shard's, without the
// split keys.
func (s *Set) Metadata() tensor.Metadata {
	md := s.Files[0].Metadata.Clone()
	for _, k := range []string{KeySplitNo, KeySplitCount, KeySplitTensorsCount} {
		md.Delete(k)
	}
	return md
}
