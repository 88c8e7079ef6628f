package pytorch

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/sluice-ml/sluice/plugins/pytorch/pickle"
	"github.com/sluice-ml/sluice/sdk/binio"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// maxPickleBytes bounds the size of data.pkl. A state dict's pickle holds
// names, shapes and storage keys only: tens of bytes per tensor.
const maxPickleBytes = 256 << 20

// legacyMagic starts the pickle-stream format torch.save wrote before
// PyTorch 1.6 (a pickled magic number 0x1950a86a20f9469cfc6c).
var legacyMagic = []byte{0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19}

// archive is one file torch.save wrote: a zip holding <prefix>/data.pkl and
// one entry <prefix>/data/<key> per storage.
type archive struct {
	path      string // as given, for errors
	abs       string // absolute, for file references
	f         *os.File
	size      int64
	zr        *zip.Reader
	prefix    string
	entries   map[string]*zip.File
	bigEndian bool
	// mu guards storages, which Open calls may fill concurrently.
	mu sync.Mutex
	// storages caches the checked zip entry of each storage key.
	storages map[string]*storageEntry
	// tensors are the state dict's tensors, in order.
	tensors []namedTensor
	// selected names the top-level entry the state dict came from, if any.
	selected string
}

// storageEntry is a storage's zip entry, checked against the file.
type storageEntry struct {
	file   *zip.File
	stored bool  // kept uncompressed
	offset int64 // file offset of the bytes, when stored
}

func (a *archive) errorf(off int64, format string, args ...any) *binio.FormatError {
	return binio.Errorf(a.path, off, format, args...)
}

// openArchive opens path and reads its zip directory.
func openArchive(path string) (*archive, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", path, err)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, &plugin.InputError{File: path, Msg: "cannot open the checkpoint", Err: err}
	}
	a := &archive{path: path, abs: abs, f: f, storages: map[string]*storageEntry{}}
	if err := a.readDirectory(); err != nil {
		f.Close()
		return nil, err
	}
	return a, nil
}

func (a *archive) close() error { return a.f.Close() }

func (a *archive) readDirectory() error {
	st, err := a.f.Stat()
	if err != nil {
		return fmt.Errorf("%s: %w", a.path, err)
	}
	a.size = st.Size()
	head := make([]byte, len(legacyMagic))
	n, _ := a.f.ReadAt(head, 0)
	head = head[:n]
	if bytes.Equal(head, legacyMagic) {
		return a.errorf(0, "this is the pickle-stream format torch.save wrote before PyTorch 1.6, which is not "+
			"supported; re-save it with a current PyTorch (torch.save(torch.load(f, weights_only=True), f2))")
	}
	if !bytes.HasPrefix(head, []byte("PK\x03\x04")) {
		return a.errorf(0, "not a torch.save zip archive (no zip signature)")
	}
	zr, err := zip.NewReader(a.f, a.size)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return &binio.FormatError{File: a.path, Offset: -1, Msg: "reading the zip directory", Err: err}
	}
	a.zr = zr
	a.entries = make(map[string]*zip.File, len(zr.File))
	var pkls []string
	for _, zf := range zr.File {
		a.entries[zf.Name] = zf
		if dir, base := splitPrefix(zf.Name); base == "data.pkl" && dir != "" {
			pkls = append(pkls, zf.Name)
		}
	}
	switch len(pkls) {
	case 0:
		for name := range a.entries {
			if strings.HasSuffix(name, "/constants.pkl") || strings.HasSuffix(name, "/code/") {
				return a.errorf(-1, "this is a TorchScript archive (torch.jit.save), not a torch.save checkpoint; "+
					"save the model's state_dict() with torch.save instead")
			}
		}
		return a.errorf(-1, "zip archive has no <archive>/data.pkl entry: not a torch.save checkpoint")
	case 1:
	default:
		return a.errorf(-1, "zip archive has %d data.pkl entries (%s); torch.save writes one", len(pkls), strings.Join(pkls, ", "))
	}
	a.prefix, _ = splitPrefix(pkls[0])
	if bo, ok := a.entries[a.prefix+"/byteorder"]; ok {
		b, err := a.readSmall(bo, 16)
		if err != nil {
			return err
		}
		switch string(b) {
		case "little":
		case "big":
			a.bigEndian = true
		default:
			return a.errorf(-1, "%s holds %q; torch writes \"little\" or \"big\"", bo.Name, b)
		}
	}
	return nil
}

// splitPrefix splits "archive/data.pkl" into "archive" and "data.pkl"; a
// name with more or fewer than one slash yields "".
func splitPrefix(name string) (dir, base string) {
	i := strings.IndexByte(name, '/')
	if i <= 0 || strings.IndexByte(name[i+1:], '/') >= 0 {
		return "", ""
	}
	return name[:i], name[i+1:]
}

// readSmall reads a whole zip entry of at most limit bytes.
func (a *archive) readSmall(zf *zip.File, limit uint64) ([]byte, error) {
	if zf.UncompressedSize64 > limit {
		return nil, a.errorf(-1, "zip entry %s is %d bytes, over the limit of %d", zf.Name, zf.UncompressedSize64, limit)
	}
	rc, err := zf.Open()
	if err != nil {
		return nil, &binio.FormatError{File: a.path, Offset: -1, Msg: "opening zip entry " + zf.Name, Err: err}
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, int64(limit)+1))
	if err != nil {
		return nil, &binio.FormatError{File: a.path, Offset: -1, Msg: "reading zip entry " + zf.Name, Err: err}
	}
	if uint64(len(b)) != zf.UncompressedSize64 {
		return nil, a.errorf(-1, "zip entry %s holds %d bytes, its directory says %d", zf.Name, len(b), zf.UncompressedSize64)
	}
	return b, nil
}

// load unpickles data.pkl with the allowlist and lists the state dict's
// tensors. key selects a top-level entry; see selectStateDict.
func (a *archive) load(key string) error {
	zf := a.entries[a.prefix+"/data.pkl"]
	data, err := a.readSmall(zf, maxPickleBytes)
	if err != nil {
		return err
	}
	base := int64(-1)
	if zf.Method == zip.Store {
		if off, err := zf.DataOffset(); err == nil {
			base = off
		}
	}
	table := &storageTable{byKey: map[string]*storage{}}
	m := &pickle.Machine{Find: findGlobal, PersistentLoad: table.load, UniqueKeys: true}
	root, err := m.Load(data)
	if err != nil {
		fe := &binio.FormatError{File: a.path, Offset: -1, Msg: zf.Name, Err: err}
		var pe *pickle.Error
		if errors.As(err, &pe) && base >= 0 {
			fe.Offset = base + pe.Offset
		}
		return fe
	}
	sd, sel, err := selectStateDict(root, key)
	if err != nil {
		return &binio.FormatError{File: a.path, Offset: -1, Msg: zf.Name, Err: err}
	}
	a.selected = sel
	ts, err := flatten(sd)
	if err != nil {
		return &binio.FormatError{File: a.path, Offset: -1, Msg: zf.Name, Err: err}
	}
	a.tensors = ts
	return nil
}

// entry returns the checked zip entry of a storage.
func (a *archive) entry(st *storage, name string) (*storageEntry, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if e, ok := a.storages[st.key]; ok {
		return e, nil
	}
	entryName := a.prefix + "/data/" + st.key
	zf, ok := a.entries[entryName]
	if !ok {
		return nil, &binio.FormatError{File: a.path, Offset: -1, Tensor: name,
			Msg: fmt.Sprintf("storage %s has no zip entry %s", st.key, entryName)}
	}
	if zf.UncompressedSize64 != st.nbytes {
		return nil, &binio.FormatError{File: a.path, Offset: -1, Tensor: name,
			Msg: fmt.Sprintf("zip entry %s holds %d bytes, the pickle says storage %s has %d", entryName, zf.UncompressedSize64, st.key, st.nbytes)}
	}
	e := &storageEntry{file: zf}
	switch zf.Method {
	case zip.Store:
		off, err := zf.DataOffset()
		if err != nil {
			return nil, &binio.FormatError{File: a.path, Offset: -1, Tensor: name, Msg: "reading the local header of " + entryName, Err: err}
		}
		end, ok := binio.AddOffsets(uint64(off), zf.CompressedSize64)
		if !ok || zf.CompressedSize64 != zf.UncompressedSize64 || end > uint64(a.size) {
			return nil, &binio.FormatError{File: a.path, Offset: off, Tensor: name,
				Msg: fmt.Sprintf("stored zip entry %s of %d bytes does not fit in the file of %d bytes", entryName, zf.CompressedSize64, a.size)}
		}
		e.stored, e.offset = true, off
	case zip.Deflate:
	default:
		return nil, &binio.FormatError{File: a.path, Offset: -1, Tensor: name,
			Msg: fmt.Sprintf("zip entry %s uses compression method %d (stored and deflate are supported)", entryName, zf.Method)}
	}
	a.storages[st.key] = e
	return e, nil
}

// layout is a tensor's checked geometry.
type layout struct {
	elemSize   uint64
	elements   uint64
	size       uint64 // bytes of the contiguous tensor
	start      uint64 // byte offset of the first element in the storage
	stop       uint64 // byte just past the last element (start when empty)
	contiguous bool
}

// checkLayout verifies that a tensor's view lies inside its storage.
func (a *archive) checkLayout(nt namedTensor) (layout, error) {
	t := nt.ref
	bad := func(format string, args ...any) (layout, error) {
		return layout{}, &binio.FormatError{File: a.path, Offset: -1, Tensor: nt.name, Msg: fmt.Sprintf(format, args...)}
	}
	info, ok := t.dtype.Info()
	if !ok || info.BlockSize != 1 {
		return bad("dtype %s is not an element type", t.dtype)
	}
	l := layout{elemSize: info.BlockBytes, contiguous: true}
	n, err := tensor.ElementCount(t.shape)
	if err != nil {
		return bad("%v", err)
	}
	l.elements = n
	hi, size := bits.Mul64(n, l.elemSize)
	if hi != 0 || size > 1<<62 {
		return bad("shape %v of %s overflows", t.shape, t.dtype)
	}
	l.size = size
	hi, start := bits.Mul64(t.offset, l.elemSize)
	if hi != 0 || start > 1<<62 {
		return bad("storage offset %d overflows", t.offset)
	}
	l.start, l.stop = start, start
	if n == 0 {
		return l, nil
	}
	last := t.offset
	want := uint64(1)
	for i := len(t.shape) - 1; i >= 0; i-- {
		if t.shape[i] != 1 && t.stride[i] != want {
			l.contiguous = false
		}
		hi, step := bits.Mul64(t.shape[i]-1, t.stride[i])
		var carry uint64
		last, carry = bits.Add64(last, step, 0)
		if hi != 0 || carry != 0 {
			return bad("size %v with stride %v overflows", t.shape, t.stride)
		}
		want *= t.shape[i] // cannot overflow: bounded by n
	}
	hi, lastByte := bits.Mul64(last, l.elemSize)
	if hi != 0 || lastByte > 1<<62 {
		return bad("size %v with stride %v overflows", t.shape, t.stride)
	}
	l.stop = lastByte + l.elemSize
	if l.stop > t.storage.nbytes {
		return bad("view (offset %d, size %v, stride %v) of %s reaches byte %d of storage %s, which has %d",
			t.offset, t.shape, t.stride, t.dtype, l.stop, t.storage.key, t.storage.nbytes)
	}
	return l, nil
}
