package npz

import (
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/sluice-ml/sluice/sdk/atomicfile"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// SinkConfig configures the npz sink.
type SinkConfig struct {
	Path string `hcl:"path" doc:"The .npz archive to write, e.g. out/model.npz."`
}

// Sink writes one .npz archive.
type Sink struct {
	cfg SinkConfig
	// force64 writes ZIP64 records everywhere (tests only).
	force64 bool

	mu      sync.Mutex
	layout  *zipLayout
	f       *atomicfile.File
	crcs    map[string]uint32
	written map[string]bool
}

// NewSink checks the configuration. It creates no file: Begin does.
func NewSink(cfg *SinkConfig) (*Sink, error) {
	if cfg.Path == "" {
		return nil, plugin.ConfigErrorf("path", "must not be empty")
	}
	return &Sink{cfg: *cfg}, nil
}

// Plan asks for float32 where NumPy has no type for a tensor's dtype and
// says that metadata is not kept. It lays the archive out to report its
// size.
func (s *Sink) Plan(ctx context.Context, in *tensor.Manifest) (*plugin.SinkPlan, error) {
	p := &plugin.SinkPlan{}
	out := in.Clone()
	for i := range out.Tensors {
		t := &out.Tensors[i]
		if _, ok := descrOf(t.DType); ok {
			continue
		}
		info, known := t.DType.Info()
		if !known || info.IsInteger() {
			return nil, &plugin.InputError{Tensor: t.Name, Msg: fmt.Sprintf("NumPy has no %s, and Sluice converts only floating-point and quantized tensors to float32", t.DType)}
		}
		p.Convert = append(p.Convert, plugin.Conversion{Tensor: t.Name, To: tensor.F32, Reason: fmt.Sprintf("NumPy has no %s; written as float32", t.DType)})
		size, err := tensor.F32.ShapeByteSize(t.Shape)
		if err != nil {
			return nil, err
		}
		t.DType, t.Size = tensor.F32, size
	}
	if n := in.Metadata.Len(); n > 0 {
		p.Notes = append(p.Notes, plugin.Decision{Msg: fmt.Sprintf("an .npz file holds no metadata: %d keys are not written", n)})
	}
	l, err := s.plan(out)
	if err != nil {
		return nil, err
	}
	p.Files = []plugin.PlannedFile{{Path: s.cfg.Path, Size: l.size, Tensors: len(out.Tensors)}}
	return p, nil
}

// plan lays out the archive of a manifest whose dtypes NumPy has.
func (s *Sink) plan(m *tensor.Manifest) (*zipLayout, error) {
	entries := make([]*zipEntry, 0, len(m.Tensors))
	for _, t := range m.Tensors {
		hdr, err := formatHeader(t.DType, t.Shape)
		if err != nil {
			return nil, &plugin.InputError{Tensor: t.Name, Msg: err.Error()}
		}
		entries = append(entries, &zipEntry{name: t.Name + ".npy", npy: hdr, size: t.Size})
	}
	l, err := planZip(entries, s.force64)
	if err != nil {
		return nil, &plugin.InputError{File: s.cfg.Path, Msg: err.Error()}
	}
	return l, nil
}

// Begin creates the archive under a temporary name and writes every local
// header; tensors then go straight to their planned offsets.
func (s *Sink) Begin(ctx context.Context, m *tensor.Manifest, opts plugin.BeginOptions) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil {
		return fmt.Errorf("npz sink %s: Begin called twice", s.cfg.Path)
	}
	l, err := s.plan(m)
	if err != nil {
		return err
	}
	// The local headers get their CRC-32s only at Commit, so no range is
	// declared final (File.Final) before it: with opts.Digests, Commit
	// hashes the archive while it syncs it.
	f, err := plugin.CreateOutput(s.cfg.Path, int64(l.size), opts)
	if err != nil {
		return err
	}
	for _, e := range l.entries {
		if _, err := f.WriteAt(e.localHeader(), int64(e.headOff)); err != nil {
			f.Abort()
			return fmt.Errorf("npz sink %s: %w", s.cfg.Path, err)
		}
	}
	s.layout, s.f = l, f
	s.crcs, s.written = map[string]uint32{}, map[string]bool{}
	return nil
}

// Write copies one tensor to its place, computing the entry's CRC-32 on
// the way. Calls for different tensors run concurrently.
func (s *Sink) Write(ctx context.Context, name string, data plugin.TensorData) error {
	s.mu.Lock()
	if s.layout == nil {
		s.mu.Unlock()
		return fmt.Errorf("npz sink %s: Write before Begin", s.cfg.Path)
	}
	e, ok := s.layout.byName[name+".npy"]
	if !ok || s.written[name] {
		s.mu.Unlock()
		return fmt.Errorf("npz sink %s: tensor %q was not planned, or was written twice", s.cfg.Path, name)
	}
	s.written[name] = true
	f := s.f
	s.mu.Unlock()
	if data.Size() != e.size {
		return fmt.Errorf("npz sink %s: tensor %q arrives with %d bytes, planned %d", s.cfg.Path, name, data.Size(), e.size)
	}
	crc := &crcWriter{sum: crc32.ChecksumIEEE(e.npy)}
	n, err := io.Copy(io.NewOffsetWriter(f, int64(e.dataOff)), io.TeeReader(io.LimitReader(data, int64(e.size)), crc))
	if err != nil {
		return fmt.Errorf("npz sink %s: tensor %q: %w", s.cfg.Path, name, err)
	}
	if uint64(n) != e.size {
		return fmt.Errorf("npz sink %s: tensor %q: %d of %d bytes arrived", s.cfg.Path, name, n, e.size)
	}
	s.mu.Lock()
	s.crcs[e.name] = crc.sum
	s.mu.Unlock()
	return nil
}

type crcWriter struct{ sum uint32 }

func (c *crcWriter) Write(p []byte) (int, error) {
	c.sum = crc32.Update(c.sum, crc32.IEEETable, p)
	return len(p), nil
}

// Commit patches the CRC-32s into the local headers, writes the central
// directory, and renames the archive into place.
func (s *Sink) Commit(ctx context.Context) ([]plugin.Artifact, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil, fmt.Errorf("npz sink %s: Commit without Begin", s.cfg.Path)
	}
	var missing []string
	for _, e := range s.layout.entries {
		if _, ok := s.crcs[e.name]; !ok {
			missing = append(missing, strings.TrimSuffix(e.name, ".npy"))
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		s.f.Abort()
		return nil, fmt.Errorf("npz sink %s: %d tensors never arrived: %s", s.cfg.Path, len(missing), strings.Join(missing, ", "))
	}
	for _, e := range s.layout.entries {
		var b [4]byte
		sum := s.crcs[e.name]
		b[0], b[1], b[2], b[3] = byte(sum), byte(sum>>8), byte(sum>>16), byte(sum>>24)
		if _, err := s.f.WriteAt(b[:], int64(e.headOff)+14); err != nil {
			s.f.Abort()
			return nil, fmt.Errorf("npz sink %s: %w", s.cfg.Path, err)
		}
	}
	if _, err := s.f.WriteAt(s.layout.centralDirectory(s.crcs), int64(s.layout.cdOff)); err != nil {
		s.f.Abort()
		return nil, fmt.Errorf("npz sink %s: %w", s.cfg.Path, err)
	}
	if err := s.f.Commit(); err != nil {
		return nil, err
	}
	return []plugin.Artifact{plugin.Committed(s.f, s.layout.size)}, nil
}

// Abort removes the temporary archive.
func (s *Sink) Abort(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	return s.f.Abort()
}
