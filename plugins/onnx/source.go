package onnx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/sluice-ml/sluice/sdk/binio"
	"github.com/sluice-ml/sluice/sdk/localpath"
	"github.com/sluice-ml/sluice/sdk/plugin"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// Config configures an onnx source.
type Config struct {
	// Path is the .onnx model file.
	Path string `hcl:"path" doc:"The ONNX model file (.onnx). External data files it names must lie in its directory."`
	// Only keeps the initializers whose names match one of these globs.
	Only []string `hcl:"only,optional" doc:"Glob patterns (path.Match syntax); only initializers whose names match one are read. Default: all."`
}

// Source reads the initializers of an ONNX model. It is safe for
// concurrent Open calls.
type Source struct {
	cfg Config

	mu       sync.Mutex
	f        *os.File
	abs      string
	manifest *tensor.Manifest
	byName   map[string]*located
}

// located is an initializer with its data checked: a byte range of a file
// (raw_data or external data), or typed fields of the model to decode.
type located struct {
	init *initializer
	typ  onnxType
	size uint64
	ref  *tensor.FileRef
}

// NewSource checks the configuration; Describe reads the model.
func NewSource(cfg Config) (*Source, error) {
	if cfg.Path == "" {
		return nil, plugin.ConfigErrorf("path", "a model path is required")
	}
	if g, err := tensor.Selection(cfg.Only).Check(); err != nil {
		return nil, plugin.ConfigErrorf("only", "bad glob %q: %v", g, err)
	}
	if _, err := os.Stat(cfg.Path); err != nil {
		return nil, &plugin.InputError{File: cfg.Path, Msg: "cannot read the model", Err: err}
	}
	return &Source{cfg: cfg}, nil
}

// Describe parses the model's structure (never tensor bytes) and returns
// its initializers and metadata.
func (s *Source) Describe(ctx context.Context) (*tensor.Manifest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.manifest != nil {
		return s.manifest.Clone(), nil
	}
	m, err := s.describe()
	if err != nil {
		if s.f != nil {
			s.f.Close()
			s.f = nil
		}
		return nil, err
	}
	s.manifest = m
	return m.Clone(), nil
}

func (s *Source) describe() (*tensor.Manifest, error) {
	abs, err := filepath.Abs(s.cfg.Path)
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", s.cfg.Path, err)
	}
	s.abs = abs
	f, err := os.Open(s.cfg.Path)
	if err != nil {
		return nil, &plugin.InputError{File: s.cfg.Path, Msg: "cannot open the model", Err: err}
	}
	s.f = f
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	mod, err := parseModel(f, st.Size(), s.cfg.Path)
	if err != nil {
		return nil, err
	}
	if len(mod.sparse) > 0 {
		return nil, &plugin.InputError{File: s.cfg.Path, Tensor: mod.sparse[0], Msg: "sparse initializers are not supported"}
	}
	m := &tensor.Manifest{}
	setMetadata(&m.Metadata, mod)
	s.byName = map[string]*located{}
	for _, in := range mod.inits {
		if !tensor.Selection(s.cfg.Only).Selects(in.name) {
			continue
		}
		if in.name == "" {
			return nil, binio.Errorf(s.cfg.Path, in.at, "an initializer has no name")
		}
		if _, dup := s.byName[in.name]; dup {
			return nil, &binio.FormatError{File: s.cfg.Path, Offset: in.at, Tensor: in.name, Msg: "two initializers have this name"}
		}
		loc, ti, err := s.locate(in, st.Size())
		if err != nil {
			return nil, err
		}
		s.byName[in.name] = loc
		m.Tensors = append(m.Tensors, ti)
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", s.cfg.Path, err)
	}
	return m, nil
}

// setMetadata records the model's and graph's descriptive fields.
func setMetadata(md *tensor.Metadata, m *model) {
	md.Set("onnx.ir_version", tensor.I64Value(int64(m.irVersion)))
	str := func(key, v string) {
		if v != "" {
			md.Set(key, tensor.StringValue(v))
		}
	}
	str("onnx.producer_name", m.producerName)
	str("onnx.producer_version", m.producerVersion)
	str("onnx.domain", m.domain)
	if m.hasModelVersion {
		md.Set("onnx.model_version", tensor.I64Value(m.modelVersion))
	}
	str("onnx.doc_string", m.docString)
	str("onnx.graph.name", m.graphName)
	str("onnx.graph.doc_string", m.graphDoc)
	md.Set("onnx.graph.nodes", tensor.U64Value(m.nodes))
	for _, o := range m.opsets {
		d := o.domain
		if d == "" {
			d = "ai.onnx"
		}
		md.Set("onnx.opset."+d, tensor.I64Value(o.version))
	}
	for _, p := range m.props {
		md.Set("onnx.metadata."+p.key, tensor.StringValue(p.value))
	}
}

// locate checks an initializer's type, shape and data and decides where its
// bytes come from.
func (s *Source) locate(in *initializer, fileSize int64) (*located, tensor.TensorInfo, error) {
	bad := func(format string, args ...any) (*located, tensor.TensorInfo, error) {
		return nil, tensor.TensorInfo{}, &binio.FormatError{File: s.cfg.Path, Offset: in.at, Tensor: in.name, Msg: fmt.Sprintf(format, args...)}
	}
	typ, err := lookupType(in.dataType)
	if err != nil {
		return nil, tensor.TensorInfo{}, &plugin.InputError{File: s.cfg.Path, Tensor: in.name, Msg: err.Error()}
	}
	shape := make([]uint64, len(in.dims))
	for i, d := range in.dims {
		if d < 0 {
			return bad("dimension %d is %d", i, d)
		}
		shape[i] = uint64(d)
	}
	size, err := typ.dtype.ShapeByteSize(shape)
	if err != nil {
		return bad("%v", err)
	}
	elements, _ := tensor.ElementCount(shape)
	ti := tensor.TensorInfo{Name: in.name, DType: typ.dtype, Shape: shape, Size: size}
	if in.docString != "" {
		ti.SetAttr("onnx.doc_string", in.docString)
	}
	loc := &located{init: in, typ: typ, size: size}
	if in.segmented {
		return bad("segmented tensors (TensorProto.segment) are not supported")
	}
	if in.otherData != 0 {
		return bad("holds %s, which a %s tensor cannot use", fieldNames[in.otherData], typ.name)
	}
	switch {
	case in.dataLocation == 1:
		if in.hasRaw || len(in.typed) > 0 {
			return bad("data_location is EXTERNAL but the tensor also holds data in the model")
		}
		ref, err := s.external(in, size)
		if err != nil {
			return nil, tensor.TensorInfo{}, err
		}
		loc.ref = ref
	case in.dataLocation != 0:
		return bad("unknown data_location %d", in.dataLocation)
	case in.hasRaw:
		if len(in.typed) > 0 {
			return bad("holds both raw_data and %s", fieldNames[in.typed[0].field])
		}
		if uint64(in.rawLen) != size {
			return bad("raw_data holds %d bytes, %s %v needs %d", in.rawLen, typ.name, shape, size)
		}
		loc.ref = &tensor.FileRef{Path: s.abs, Offset: uint64(in.rawOff), Length: size}
	case len(in.typed) > 0:
		var count uint64
		for _, seg := range in.typed {
			if seg.field != typ.field {
				return bad("holds %s, but a %s tensor is stored in %s", fieldNames[seg.field], typ.name, fieldNames[typ.field])
			}
			count += seg.count
		}
		if count != elements {
			return bad("%s holds %d values, shape %v needs %d", fieldNames[typ.field], count, shape, elements)
		}
	case elements != 0:
		return bad("has no data (no raw_data, typed values or external data)")
	}
	if loc.ref != nil && size > 0 {
		ti.Location = loc.ref
	}
	return loc, ti, nil
}

// external resolves an initializer's external data: a file inside the
// model's directory (no "..", no absolute path, no symlink leading out), and
// a byte range in it of exactly the tensor's size.
func (s *Source) external(in *initializer, size uint64) (*tensor.FileRef, error) {
	bad := func(format string, args ...any) error {
		return &binio.FormatError{File: s.cfg.Path, Offset: in.at, Tensor: in.name, Msg: "external data: " + fmt.Sprintf(format, args...)}
	}
	var location string
	var offset, length uint64
	hasLength := false
	for _, kv := range in.external {
		var err error
		switch kv.key {
		case "location":
			location = kv.value
		case "offset":
			offset, err = strconv.ParseUint(kv.value, 10, 63)
		case "length":
			length, err = strconv.ParseUint(kv.value, 10, 63)
			hasLength = true
		}
		if err != nil {
			return nil, bad("%s %q is not a number", kv.key, kv.value)
		}
	}
	p, err := insideDir(filepath.Dir(s.abs), location)
	if err != nil {
		return nil, bad("%v", err)
	}
	st, err := os.Stat(p)
	if err != nil {
		return nil, &plugin.InputError{File: s.cfg.Path, Tensor: in.name, Msg: "external data file " + location + " cannot be read", Err: err}
	}
	if !st.Mode().IsRegular() {
		return nil, bad("%s is not a regular file", location)
	}
	if offset > uint64(st.Size()) {
		return nil, bad("offset %d lies past the end of %s (%d bytes)", offset, location, st.Size())
	}
	if !hasLength {
		length = uint64(st.Size()) - offset
	}
	if length != size {
		return nil, bad("%s holds %d bytes at offset %d, the tensor needs %d", location, length, offset, size)
	}
	if end, ok := binio.AddOffsets(offset, length); !ok || end > uint64(st.Size()) {
		return nil, bad("range [%d, +%d) passes the end of %s (%d bytes)", offset, length, location, st.Size())
	}
	return &tensor.FileRef{Path: p, Offset: offset, Length: length}, nil
}

// insideDir joins a relative location to dir and checks, after resolving
// symlinks, that it stays inside dir. It returns the resolved path.
func insideDir(dir, location string) (string, error) {
	switch {
	case location == "":
		return "", fmt.Errorf("no location")
	case strings.ContainsAny(location, "\\\x00"):
		return "", fmt.Errorf("location %q holds a backslash or NUL", location)
	case filepath.IsAbs(location) || strings.HasPrefix(location, "/"):
		return "", fmt.Errorf("location %q is absolute; it must name a file in the model's directory", location)
	case !filepath.IsLocal(location):
		return "", fmt.Errorf("location %q leaves the model's directory", location)
	}
	real, err := filepath.EvalSymlinks(filepath.Join(dir, location))
	if err != nil {
		return "", fmt.Errorf("location %q: %w", location, err)
	}
	// Links inside the Hugging Face cache repository the model's directory
	// belongs to are allowed (sdk/localpath).
	if err := localpath.Inside(dir, filepath.Join(dir, location)); err != nil {
		var le *localpath.Error
		if errors.As(err, &le) {
			return "", fmt.Errorf("location %q resolves through a symlink to %s, outside the model's directory", location, real)
		}
		return "", fmt.Errorf("location %q: %w", location, err)
	}
	return real, nil
}

// Open returns one initializer's bytes, little-endian, row-major.
func (s *Source) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	s.mu.Lock()
	if s.manifest == nil {
		s.mu.Unlock()
		if _, err := s.Describe(ctx); err != nil {
			return nil, err
		}
		s.mu.Lock()
	}
	loc, ok := s.byName[name]
	f := s.f
	s.mu.Unlock()
	if !ok {
		return nil, &plugin.InputError{File: s.cfg.Path, Tensor: name, Msg: "no such initializer"}
	}
	switch {
	case loc.size == 0:
		return io.NopCloser(strings.NewReader("")), nil
	case loc.ref != nil && loc.ref.Path == s.abs:
		return io.NopCloser(io.NewSectionReader(f, int64(loc.ref.Offset), int64(loc.ref.Length))), nil
	case loc.ref != nil:
		ef, err := os.Open(loc.ref.Path)
		if err != nil {
			return nil, &plugin.InputError{File: loc.ref.Path, Tensor: name, Msg: "cannot open external data", Err: err}
		}
		return &fileSection{SectionReader: io.NewSectionReader(ef, int64(loc.ref.Offset), int64(loc.ref.Length)), f: ef}, nil
	}
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return newTypedReader(binio.NewReader(f, st.Size(), s.cfg.Path), loc), nil
}

type fileSection struct {
	*io.SectionReader
	f *os.File
}

func (f *fileSection) Close() error { return f.f.Close() }

// Close releases the model file.
func (s *Source) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}
