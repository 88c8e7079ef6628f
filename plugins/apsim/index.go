package apsim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/sluice-ml/sluice/sdk/binio"
	"github.com/sluice-ml/sluice/sdk/localpath"
	"github.com/sluice-ml/sluice/sdk/plugin"
)

// IndexSuffix ends the name of a sharded set's index: NAME.apsim.index.json.
const IndexSuffix = ".apsim.index.json"

// Extension is the suffix of apsim files.
const Extension = ".apsim"

// index is NAME.apsim.index.json: the Hugging Face layout (metadata with
// total_size, and weight_map from tensor name to shard file) plus apsim's
// members in metadata.
type index struct {
	Metadata  indexMeta         `json:"metadata"`
	WeightMap map[string]string `json:"weight_map"`
}

type indexMeta struct {
	TotalSize *uint64      `json:"total_size"`
	Format    string       `json:"format"`
	Version   string       `json:"version"`
	Apsi      string       `json:"apsi"`
	Shards    []indexShard `json:"shards"`
	KeyID     string       `json:"key_id,omitempty"`
	Signature string       `json:"signature,omitempty"`
}

type indexShard struct {
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
}

// signedMeta returns the index members the signature covers besides the
// shards and the weight map.
func (m *indexMeta) signedMeta() map[string]string {
	s := map[string]string{KeyFormat: m.Format, KeyVersion: m.Version, KeyApsi: m.Apsi, "total_size": strconv.FormatUint(*m.TotalSize, 10)}
	if m.KeyID != "" {
		s[KeyKeyID] = m.KeyID
	}
	return s
}

// signedShards returns the shards as the signature covers them.
func (m *indexMeta) signedShards() []signedShard {
	out := make([]signedShard, len(m.Shards))
	for i, s := range m.Shards {
		out[i].File = s.File
		var f file
		f.sha256 = s.SHA256
		out[i].Digest = f.declaredDigest()
	}
	return out
}

func (ix *index) encode() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(ix); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// parseIndex reads and checks an index: strict JSON, apsim's format and
// version, shard names that stay in the index's directory, digests, and a
// weight map that names only listed shards.
func parseIndex(raw []byte, path string) (*index, error) {
	bad := func(format string, args ...any) error {
		return &binio.FormatError{File: path, Offset: -1, Msg: fmt.Sprintf(format, args...)}
	}
	var ix index
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ix); err != nil {
		off := int64(-1)
		if se, ok := err.(*json.SyntaxError); ok {
			off = se.Offset
		}
		return nil, &binio.FormatError{File: path, Offset: off, Msg: "not a valid apsim index", Err: err}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, bad("unexpected data after the index's JSON object")
	}
	if err := indexKeys(raw); err != nil {
		return nil, bad("%v", err)
	}
	m := &ix.Metadata
	if m.Format != FormatName {
		return nil, bad("not an apsim index: metadata.format is %.40q, not %q", m.Format, FormatName)
	}
	if m.Version != FormatVersion {
		return nil, bad("apsim index version %.40q is not supported (this reader knows version %s)", m.Version, FormatVersion)
	}
	if m.Apsi == "" || m.TotalSize == nil || ix.WeightMap == nil {
		return nil, bad("the index needs metadata.apsi, metadata.total_size and weight_map")
	}
	if len(m.Shards) < 1 || len(m.Shards) > maxShards {
		return nil, bad("the index lists %d shards (1 to %d)", len(m.Shards), maxShards)
	}
	if (m.Signature == "") != (m.KeyID == "") {
		return nil, bad("signature and key_id must appear together")
	}
	if m.Signature != "" && !isLowerHex(m.Signature, 64) {
		return nil, bad("signature is not 64 lowercase hex digits")
	}
	files := map[string]bool{}
	for i, s := range m.Shards {
		if err := checkShardName(s.File); err != nil {
			return nil, bad("shard %d: %v", i+1, err)
		}
		if files[s.File] {
			return nil, bad("shard %q is listed twice", s.File)
		}
		files[s.File] = true
		if !isLowerHex(s.SHA256, 64) {
			return nil, bad("shard %q: sha256 is not 64 lowercase hex digits", s.File)
		}
	}
	for name, f := range ix.WeightMap {
		if !files[f] {
			return nil, &binio.FormatError{File: path, Offset: -1, Tensor: name, Msg: fmt.Sprintf("weight_map names %.80q, which is not one of the index's shards", f)}
		}
	}
	return &ix, nil
}

// indexKeys checks that the index spells its keys exactly (Go's decoding
// of struct fields ignores case).
func indexKeys(raw []byte) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return err
	}
	if err := exactKeys(raw, "metadata", "weight_map"); err != nil {
		return fmt.Errorf("the index %v", err)
	}
	var md map[string]json.RawMessage
	if err := json.Unmarshal(top["metadata"], &md); err != nil {
		return fmt.Errorf("metadata is not a JSON object")
	}
	allowed := map[string]bool{"total_size": true, "format": true, "version": true, "apsi": true, "shards": true, "key_id": true, "signature": true}
	for k := range md {
		if !allowed[k] {
			return fmt.Errorf("metadata has the unknown key %.40q", k)
		}
	}
	var shards []json.RawMessage
	if err := json.Unmarshal(md["shards"], &shards); err != nil {
		return fmt.Errorf("metadata.shards is not a JSON array")
	}
	for i, s := range shards {
		if err := exactKeys(s, "file", "sha256"); err != nil {
			return fmt.Errorf("metadata.shards[%d] %v", i, err)
		}
	}
	return nil
}

// checkShardName accepts a plain file name: no directory part, not "." or
// "..", no NUL, not absolute.
func checkShardName(name string) error {
	switch {
	case name == "" || name == "." || name == "..":
		return fmt.Errorf("shard name %q is not a file name", name)
	case strings.ContainsAny(name, "/\\\x00") || filepath.IsAbs(name) || filepath.Base(name) != name || filepath.VolumeName(name) != "":
		return fmt.Errorf("shard name %.80q leaves the index's directory; an index may only name files beside it", name)
	}
	return nil
}

// shardPath resolves a shard name against the index's directory and makes
// sure the result is a regular file in that directory: a symbolic link that
// points elsewhere is refused.
func shardPath(dir, name string) (string, error) {
	if err := checkShardName(name); err != nil {
		return "", err
	}
	p := filepath.Join(dir, name)
	fi, err := os.Lstat(p)
	if err != nil {
		return "", &plugin.InputError{File: p, Msg: "shard listed in the index cannot be opened", Err: err}
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		target, err := filepath.EvalSymlinks(p)
		if err != nil {
			return "", &plugin.InputError{File: p, Msg: "cannot resolve the symbolic link", Err: err}
		}
		// Links inside the directory, or inside the Hugging Face cache
		// repository it is a snapshot of, are fine (sdk/localpath).
		if err := localpath.Inside(dir, p); err != nil {
			var le *localpath.Error
			if errors.As(err, &le) {
				return "", &plugin.InputError{File: p, Msg: "is a symbolic link out of the index's directory (to " + target + "); an index may only name files beside it"}
			}
			return "", &plugin.InputError{File: p, Msg: "cannot resolve the symbolic link", Err: err}
		}
		return target, nil
	}
	if !fi.Mode().IsRegular() {
		return "", &plugin.InputError{File: p, Msg: "is not a regular file"}
	}
	return p, nil
}

// readIndex reads an index file with its size capped.
func readIndex(path string) (*index, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, &plugin.InputError{File: path, Msg: "cannot open", Err: err}
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, &plugin.InputError{File: path, Msg: "cannot stat", Err: err}
	}
	if fi.Size() > maxIndexSize {
		return nil, binio.Errorf(path, 0, "index of %d bytes is over the %d-byte limit", fi.Size(), maxIndexSize)
	}
	raw, err := io.ReadAll(io.LimitReader(fh, maxIndexSize+1))
	if err != nil {
		return nil, &plugin.InputError{File: path, Msg: "cannot read", Err: err}
	}
	return parseIndex(raw, path)
}

// Names of the files of a set.

// stem strips the .apsim suffix from a sink path.
func stem(p string) string { return strings.TrimSuffix(p, Extension) }

// ShardName returns the file name of shard i of n for a checkpoint written
// at path: NAME-0000i-of-0000N.apsim.
func ShardName(path string, i, n int) string {
	return fmt.Sprintf("%s-%05d-of-%05d%s", filepath.Base(stem(path)), i, n, Extension)
}

// IndexPath returns the index path of a checkpoint written at path.
func IndexPath(path string) string { return stem(path) + IndexSuffix }

var shardNameRE = regexp.MustCompile(`^(.*)-(\d{5})-of-(\d{5})\.apsim$`)

// indexOfShard derives the index path of a shard's set from its file name.
func indexOfShard(path string, i, n int) (string, error) {
	m := shardNameRE.FindStringSubmatch(filepath.Base(path))
	if m == nil || m[2] != fmt.Sprintf("%05d", i) || m[3] != fmt.Sprintf("%05d", n) {
		return "", &plugin.InputError{File: path, Msg: fmt.Sprintf("is shard %d/%d of a set, but its name is not NAME-%05d-of-%05d.apsim, so its index cannot be found; open the NAME%s file", i, n, i, n, IndexSuffix)}
	}
	return filepath.Join(filepath.Dir(path), m[1]+IndexSuffix), nil
}
