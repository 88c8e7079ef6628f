package apsim

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/sluice-ml/sluice/sdk/keyring"
	"github.com/sluice-ml/sluice/sdk/plugin"
	st "github.com/sluice-ml/sluice/sdk/safetensors"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// keySpec is a key given in a configuration: the per-user key or a shared
// secret. It never prints the secret.
type keySpec struct {
	user   bool
	shared string
}

func (k *keySpec) String() string {
	if k.user {
		return keyring.UserKeyID
	}
	return keyring.SharedKeyID
}

// resolve loads the key. forSigning creates the per-user key when it does
// not exist yet.
func (k *keySpec) resolve(forSigning bool) (*keyring.Key, error) {
	if k.user {
		if forSigning {
			return keyring.User()
		}
		return keyring.LoadUser()
	}
	return keyring.Shared(k.shared)
}

// parseSourceKey reads the source's key attribute: true (per-user key), a
// non-empty string (shared secret), or false/absent (no key).
func parseSourceKey(raw json.RawMessage) (*keySpec, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" || string(raw) == "false" {
		return nil, nil
	}
	if string(raw) == "true" {
		return &keySpec{user: true}, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, plugin.ConfigErrorf("key", "must be true (your per-user key) or a shared secret string")
	}
	if s == "" {
		return nil, plugin.ConfigErrorf("key", "the shared secret is empty")
	}
	return &keySpec{shared: s}, nil
}

// Source reads an apsim checkpoint.
type Source struct {
	path   string
	verify bool
	key    *keySpec

	mu       sync.Mutex
	ckpt     *checkpoint
	manifest *tensor.Manifest
	where    map[string]tensorPlace
}

// tensorPlace locates one manifest tensor in the open files.
type tensorPlace struct {
	file   *openFile
	entry  *st.Entry    // a plain tensor
	qt     *qtensorPart // a QTensor
	offset int64
}

// OpenSource checks the configuration; Describe reads the checkpoint.
func OpenSource(cfg *SourceConfig) (*Source, error) {
	if cfg.Path == "" {
		return nil, plugin.ConfigErrorf("path", "must not be empty")
	}
	key, err := parseSourceKey(cfg.Key)
	if err != nil {
		return nil, err
	}
	s := &Source{path: cfg.Path, verify: cfg.Verify == nil || *cfg.Verify, key: key}
	if key != nil {
		s.verify = true // a key always verifies
	}
	if _, err := os.Stat(cfg.Path); err != nil {
		return nil, &plugin.InputError{File: cfg.Path, Msg: "cannot open", Err: err}
	}
	return s, nil
}

// Describe reads the headers (and, unless verify = false, the data to check
// every digest) and returns the manifest. Plain tensors carry a Location in
// their file; QTensors are served by Open.
func (s *Source) Describe(ctx context.Context) (*tensor.Manifest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.manifest != nil {
		return s.manifest, nil
	}
	var key *keyring.Key
	if s.key != nil {
		k, err := s.key.resolve(false)
		if err != nil {
			return nil, &plugin.InputError{File: s.path, Msg: "cannot load the " + s.key.String(), Err: err}
		}
		key = k
	}
	c, err := load(ctx, s.path, s.verify, key)
	if err != nil {
		return nil, err
	}
	m, where, err := c.manifest()
	if err != nil {
		c.close()
		return nil, err
	}
	s.ckpt, s.manifest, s.where = c, m, where
	return m, nil
}

// Open returns a tensor's bytes: a plain tensor as stored, a QTensor as its
// scales followed by its codes.
func (s *Source) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	s.mu.Lock()
	where := s.where
	s.mu.Unlock()
	if where == nil {
		if _, err := s.Describe(ctx); err != nil {
			return nil, err
		}
		s.mu.Lock()
		where = s.where
		s.mu.Unlock()
	}
	p, ok := where[name]
	if !ok {
		return nil, &plugin.InputError{File: s.path, Tensor: name, Msg: "no such tensor"}
	}
	fh := p.file.fh
	if p.entry != nil {
		return io.NopCloser(io.NewSectionReader(fh, p.offset+int64(p.entry.Begin), int64(p.entry.Size()))), nil
	}
	return io.NopCloser(io.MultiReader(
		io.NewSectionReader(fh, p.offset+int64(p.qt.scales.Begin), int64(p.qt.scales.Size())),
		io.NewSectionReader(fh, p.offset+int64(p.qt.codes.Begin), int64(p.qt.codes.Size())),
	)), nil
}

// Close releases the files.
func (s *Source) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ckpt != nil {
		s.ckpt.close()
		s.ckpt = nil
	}
	s.where = nil
	s.manifest = nil
	return nil
}

// openFile is a parsed file with its open handle.
type openFile struct {
	*file
	fh  *os.File
	abs string
}

// checkpoint is a loaded single file or set.
type checkpoint struct {
	files     []*openFile
	index     *index
	indexPath string
	signed    bool
	keyID     string
	verified  bool // digests were recomputed
	keyed     bool // the signature was checked
}

func (c *checkpoint) close() {
	for _, f := range c.files {
		if f.fh != nil {
			f.fh.Close()
		}
	}
}

// load opens path (a file, an index, or a shard of a set), checks the set's
// consistency, and, when asked, every digest and the signature.
func load(ctx context.Context, path string, verify bool, key *keyring.Key) (_ *checkpoint, err error) {
	if key != nil {
		verify = true
	}
	c := &checkpoint{}
	defer func() {
		if err != nil {
			c.close()
		}
	}()
	if strings.HasSuffix(path, IndexSuffix) {
		return c, c.loadSet(ctx, path, verify, key)
	}
	f, fh, err := openApsim(path)
	if err != nil {
		return c, err
	}
	if f.shards > 0 {
		fh.Close()
		idx, err := indexOfShard(path, f.shard, f.shards)
		if err != nil {
			return c, err
		}
		return c, c.loadSet(ctx, idx, verify, key)
	}
	c.files = []*openFile{{file: f, fh: fh, abs: absPath(path)}}
	return c, c.checkSingle(ctx, verify, key)
}

// checkSingle checks the digest (when verify) and the signature (when key is
// set) of a single-file checkpoint.
func (c *checkpoint) checkSingle(ctx context.Context, verify bool, key *keyring.Key) error {
	f := c.files[0]
	c.signed, c.keyID = f.signature != "", f.keyID
	if verify || key != nil {
		if err := c.verifyDigests(ctx); err != nil {
			return err
		}
	}
	if key != nil {
		if f.signature == "" {
			return &integrityError{file: f.path, err: ErrUnsigned, msg: "a key was given, so only a signed checkpoint is accepted"}
		}
		msg := signingInput([]signedShard{{Digest: f.declaredDigest()}}, f.header.Metadata, nil)
		if err := checkMAC(key, msg, f.signature, f.path); err != nil {
			return err
		}
		c.keyed = true
	}
	return nil
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

func checkMAC(key *keyring.Key, msg []byte, sigHex, path string) error {
	sig, err := hex.DecodeString(sigHex)
	if err != nil || !key.Verify(msg, sig) {
		return &integrityError{file: path, err: ErrSignature, msg: "checked with the " + key.ID()}
	}
	return nil
}

func (c *checkpoint) loadSet(ctx context.Context, indexPath string, verify bool, key *keyring.Key) error {
	ix, err := readIndex(indexPath)
	if err != nil {
		return err
	}
	c.index, c.indexPath = ix, indexPath
	c.signed, c.keyID = ix.Metadata.Signature != "", ix.Metadata.KeyID
	dir := filepath.Dir(indexPath)
	n := len(ix.Metadata.Shards)
	located := map[string]string{} // container entry → shard file
	var total uint64
	for i, sh := range ix.Metadata.Shards {
		p, err := shardPath(dir, sh.File)
		if err != nil {
			return err
		}
		f, fh, err := openApsim(p)
		if err != nil {
			return err
		}
		c.files = append(c.files, &openFile{file: f, fh: fh, abs: absPath(p)})
		mixed := func(format string, args ...any) error {
			return &integrityError{file: p, err: ErrMixedShards, msg: fmt.Sprintf(format, args...)}
		}
		switch {
		case n == 1 && f.shards != 0:
			return mixed("the index lists one file, but the file says it is shard %d/%d", f.shard, f.shards)
		case n > 1 && (f.shard != i+1 || f.shards != n):
			return mixed("the index lists it as shard %d/%d, but the file says %s", i+1, n, tensor.FormatShard(f.shard, f.shards))
		case f.sha256 != sh.SHA256:
			return mixed("its sha256 differs from the one %s records for it: it belongs to another checkpoint or was rewritten", filepath.Base(indexPath))
		case f.header.Metadata[KeyApsi] != ix.Metadata.Apsi:
			return mixed("written by %.60q, the index by %.60q", f.header.Metadata[KeyApsi], ix.Metadata.Apsi)
		case i > 0 && f.header.Metadata[KeyMetadata] != "{}":
			return mixed("it carries checkpoint metadata, which only the first shard of a set holds")
		case f.signature != "":
			return mixed("a shard of a set carries its own signature")
		}
		for _, e := range f.header.Tensors {
			if prev, dup := located[e.Name]; dup {
				return mixed("tensor %q is also in %s", e.Name, prev)
			}
			located[e.Name] = sh.File
			if ix.WeightMap[e.Name] != sh.File {
				return mixed("tensor %q is in %s, but weight_map says %.80q", e.Name, sh.File, ix.WeightMap[e.Name])
			}
		}
		total += f.physicalSize()
	}
	if len(located) != len(ix.WeightMap) {
		for name, file := range ix.WeightMap {
			if _, ok := located[name]; !ok {
				return &integrityError{file: indexPath, err: ErrMixedShards, msg: fmt.Sprintf("weight_map puts tensor %q in %s, which does not hold it", name, file)}
			}
		}
	}
	if total != *ix.Metadata.TotalSize {
		return &integrityError{file: indexPath, err: ErrMixedShards, msg: fmt.Sprintf("total_size is %d but the shards hold %d bytes of tensors", *ix.Metadata.TotalSize, total)}
	}
	if verify {
		if err := c.verifyDigests(ctx); err != nil {
			return err
		}
	}
	if key != nil {
		if ix.Metadata.Signature == "" {
			return &integrityError{file: indexPath, err: ErrUnsigned, msg: "a key was given, so only a signed checkpoint is accepted"}
		}
		msg := signingInput(ix.Metadata.signedShards(), ix.Metadata.signedMeta(), ix.WeightMap)
		if err := checkMAC(key, msg, ix.Metadata.Signature, indexPath); err != nil {
			return err
		}
		c.keyed = true
	}
	return nil
}

// verifyDigests recomputes every file's digest, several files at once.
func (c *checkpoint) verifyDigests(ctx context.Context) error {
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	errs := make([]error, len(c.files))
	var wg sync.WaitGroup
	for i, f := range c.files {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if ctx.Err() != nil {
				errs[i] = ctx.Err()
				return
			}
			errs[i] = f.verifyDigest()
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	c.verified = true
	return nil
}

// manifest builds the checkpoint's manifest: its metadata, then every tensor
// in file and data order, QTensors under their own names with the
// companion scales folded in.
func (c *checkpoint) manifest() (*tensor.Manifest, map[string]tensorPlace, error) {
	m := &tensor.Manifest{}
	if len(c.files) > 0 {
		m.Metadata = c.files[0].metadata.Clone()
	}
	where := map[string]tensorPlace{}
	for _, f := range c.files {
		for i := range f.header.Tensors {
			e := &f.header.Tensors[i]
			if _, dup := where[e.Name]; dup {
				return nil, nil, &integrityError{file: f.path, err: ErrMixedShards, msg: fmt.Sprintf("tensor %q appears twice in the set", e.Name)}
			}
			if qt, ok := f.qtensors[e.Name]; ok {
				info := tensor.TensorInfo{Name: e.Name}
				qt.q.SetAttrs(&info)
				if qt.unit != "" {
					info.SetAttr(tensor.AttrUnit, qt.unit)
				}
				m.Tensors = append(m.Tensors, info)
				where[e.Name] = tensorPlace{file: f, qt: qt, offset: f.header.DataOffset}
				continue
			}
			if f.companions[e.Name] {
				continue // a QTensor's scales
			}
			info := tensor.TensorInfo{Name: e.Name, DType: e.DType, Shape: e.Shape, Size: e.Size(),
				Location: &tensor.FileRef{Path: f.abs, Offset: uint64(f.header.DataOffset) + e.Begin, Length: e.Size()}}
			if u, ok := f.units[e.Name]; ok {
				info.SetAttr(tensor.AttrUnit, u)
			}
			m.Tensors = append(m.Tensors, info)
			where[e.Name] = tensorPlace{file: f, entry: e, offset: f.header.DataOffset}
		}
	}
	return m, where, nil
}

// Report describes a checkpoint that Verify checked.
type Report struct {
	// Index is the index file of a set, or "".
	Index string
	// Files are the checkpoint's files with their SHA-256 digests.
	Files []FileReport
	// Signed reports whether the checkpoint carries a signature, and KeyID
	// names the key it claims (never the key itself).
	Signed bool
	KeyID  string
	// SignatureChecked reports that a key was given and the signature matched.
	SignatureChecked bool
	// Tensors is the number of tensors (QTensors count once).
	Tensors int
}

// FileReport is one verified file.
type FileReport struct {
	Path   string
	SHA256 string
}

// Verify checks an apsim checkpoint (a file, an index, or a shard of a set):
// the consistency of a set, the SHA-256 of every file and, when key is not
// nil, the signature. It is what `sluice verify` runs for apsim files.
func Verify(ctx context.Context, path string, key *keyring.Key) (*Report, error) {
	c, err := load(ctx, path, true, key)
	if err != nil {
		return nil, err
	}
	defer c.close()
	m, _, err := c.manifest()
	if err != nil {
		return nil, err
	}
	r := &Report{Index: c.indexPath, Signed: c.signed, KeyID: c.keyID, SignatureChecked: c.keyed, Tensors: len(m.Tensors)}
	for _, f := range c.files {
		r.Files = append(r.Files, FileReport{Path: f.path, SHA256: f.sha256})
	}
	return r, nil
}
