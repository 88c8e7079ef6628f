package onnx

import (
	"fmt"
	"io"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/sluice-ml/sluice/sdk/binio"
)

// Limits on what a model's structure may claim.
const (
	maxNameBytes   = 1 << 20  // tensor names, keys, domains
	maxDocBytes    = 16 << 20 // doc strings, metadata values
	maxDims        = 64
	maxSegments    = 1 << 16 // separate runs of typed data in one tensor
	maxTensors     = 1 << 22
	maxOpsets      = 1 << 12
	maxProps       = 1 << 16
	maxExternalKVs = 64
)

// Field numbers of onnx.proto messages.
const (
	modelIRVersion       = 1
	modelProducerName    = 2
	modelProducerVersion = 3
	modelDomain          = 4
	modelModelVersion    = 5
	modelDocString       = 6
	modelGraph           = 7
	modelOpsetImport     = 8
	modelMetadataProps   = 14

	graphNode              = 1
	graphName              = 2
	graphInitializer       = 5
	graphDocString         = 10
	graphSparseInitializer = 15

	tensorDims         = 1
	tensorDataType     = 2
	tensorSegment      = 3
	tensorFloatData    = 4
	tensorInt32Data    = 5
	tensorStringData   = 6
	tensorInt64Data    = 7
	tensorName         = 8
	tensorRawData      = 9
	tensorDoubleData   = 10
	tensorUint64Data   = 11
	tensorDocString    = 12
	tensorExternalData = 13
	tensorDataLocation = 14
)

// model is what the source needs of a ModelProto.
type model struct {
	irVersion       uint64
	hasIRVersion    bool
	producerName    string
	producerVersion string
	domain          string
	modelVersion    int64
	hasModelVersion bool
	docString       string
	graphName       string
	graphDoc        string
	nodes           uint64
	opsets          []opset
	props           []keyValue
	inits           []*initializer
	sparse          []string // names of sparse initializers (unsupported)
}

type opset struct {
	domain  string
	version int64
}

type keyValue struct{ key, value string }

// segment is one run of a typed data field: either a packed payload, or
// consecutive unpacked entries (tag and value each) of the same field.
type segment struct {
	field  protowire.Number
	packed bool
	off    int64
	end    int64
	count  uint64 // elements in the run
}

// initializer is one TensorProto of the graph's initializer list, with its
// data located, not loaded.
type initializer struct {
	at           int64 // offset of the TensorProto
	name         string
	dataType     uint64
	dims         []int64
	docString    string
	hasRaw       bool
	rawOff       int64
	rawLen       int64
	typed        []segment
	otherData    protowire.Number // a data field that cannot hold this tensor, if seen
	external     []keyValue
	dataLocation uint64
	segmented    bool
}

// parseModel reads a ModelProto's structure from r (size bytes).
func parseModel(r io.ReaderAt, size int64, file string) (*model, error) {
	br := binio.NewReader(r, size, file)
	br.MaxAlloc = maxDocBytes
	w := &wire{r: br, end: size}
	m := &model{}
	for w.more() {
		f, err := w.next()
		if err != nil {
			return nil, err
		}
		switch f.num {
		case modelIRVersion:
			m.irVersion, m.hasIRVersion = f.u, f.typ == protowire.VarintType
		case modelProducerName:
			m.producerName, err = w.str(f, maxNameBytes, "producer_name")
		case modelProducerVersion:
			m.producerVersion, err = w.str(f, maxNameBytes, "producer_version")
		case modelDomain:
			m.domain, err = w.str(f, maxNameBytes, "domain")
		case modelModelVersion:
			m.modelVersion, m.hasModelVersion = int64(f.u), f.typ == protowire.VarintType
		case modelDocString:
			m.docString, err = w.str(f, maxDocBytes, "doc_string")
		case modelGraph:
			err = w.message(f, "graph", func(g *wire) error { return m.parseGraph(g) })
		case modelOpsetImport:
			if len(m.opsets) >= maxOpsets {
				return nil, br.ErrorAt(f.at, "more than %d opset imports", maxOpsets)
			}
			err = w.message(f, "opset_import", func(s *wire) error {
				o := opset{}
				if err := s.each(func(g field) (err error) {
					switch g.num {
					case 1:
						o.domain, err = s.str(g, maxNameBytes, "opset domain")
					case 2:
						o.version = int64(g.u)
					}
					return err
				}); err != nil {
					return err
				}
				m.opsets = append(m.opsets, o)
				return nil
			})
		case modelMetadataProps:
			if len(m.props) >= maxProps {
				return nil, br.ErrorAt(f.at, "more than %d metadata_props", maxProps)
			}
			err = w.message(f, "metadata_props", func(s *wire) error {
				kv, err := s.keyValue()
				m.props = append(m.props, kv)
				return err
			})
		}
		if err != nil {
			return nil, err
		}
	}
	if !m.hasIRVersion {
		return nil, br.ErrorAt(0, "no ir_version: not an ONNX model")
	}
	return m, nil
}

// message parses a length-delimited field as a sub-message.
func (w *wire) message(f field, what string, parse func(*wire) error) error {
	if f.typ != protowire.BytesType {
		return w.r.ErrorAt(f.at, "%s: wire type %d, want a message", what, f.typ)
	}
	s, err := w.enter(f)
	if err != nil {
		return err
	}
	if err := parse(s); err != nil {
		return err
	}
	return w.leave(f)
}

// each calls fn for every field of the message.
func (w *wire) each(fn func(field) error) error {
	for w.more() {
		f, err := w.next()
		if err != nil {
			return err
		}
		if err := fn(f); err != nil {
			return err
		}
	}
	return nil
}

// keyValue parses a StringStringEntryProto.
func (w *wire) keyValue() (keyValue, error) {
	var kv keyValue
	err := w.each(func(f field) (err error) {
		switch f.num {
		case 1:
			kv.key, err = w.str(f, maxNameBytes, "key")
		case 2:
			kv.value, err = w.str(f, maxDocBytes, "value")
		}
		return err
	})
	return kv, err
}

func (m *model) parseGraph(w *wire) error {
	return w.each(func(f field) (err error) {
		switch f.num {
		case graphNode:
			m.nodes++
		case graphName:
			m.graphName, err = w.str(f, maxNameBytes, "graph name")
		case graphDocString:
			m.graphDoc, err = w.str(f, maxDocBytes, "graph doc_string")
		case graphInitializer:
			if len(m.inits) >= maxTensors {
				return w.r.ErrorAt(f.at, "more than %d initializers", maxTensors)
			}
			err = w.message(f, "initializer", func(s *wire) error {
				t, err := parseTensor(s, f.at)
				if err == nil {
					m.inits = append(m.inits, t)
				}
				return err
			})
		case graphSparseInitializer:
			name := ""
			err = w.message(f, "sparse_initializer", func(s *wire) error {
				return s.each(func(g field) error {
					if g.num == 1 { // values: a TensorProto
						return s.message(g, "sparse values", func(v *wire) error {
							t, err := parseTensor(v, g.at)
							if err == nil {
								name = t.name
							}
							return err
						})
					}
					return nil
				})
			})
			m.sparse = append(m.sparse, name)
		}
		return err
	})
}

// wireFor is the scalar wire type of each typed data field.
var wireFor = map[protowire.Number]protowire.Type{
	tensorFloatData:  protowire.Fixed32Type,
	tensorInt32Data:  protowire.VarintType,
	tensorInt64Data:  protowire.VarintType,
	tensorDoubleData: protowire.Fixed64Type,
	tensorUint64Data: protowire.VarintType,
}

func parseTensor(w *wire, at int64) (*initializer, error) {
	t := &initializer{at: at}
	err := w.each(func(f field) (err error) {
		switch f.num {
		case tensorDims:
			err = w.ints(f, func(v uint64) error {
				if len(t.dims) >= maxDims {
					return w.r.ErrorAt(f.at, "more than %d dims", maxDims)
				}
				t.dims = append(t.dims, int64(v))
				return nil
			})
		case tensorDataType:
			t.dataType = f.u
		case tensorSegment:
			t.segmented = true
		case tensorName:
			t.name, err = w.str(f, maxNameBytes, "tensor name")
			if err == nil && !utf8.ValidString(t.name) {
				// A name travels on to formats whose names are UTF-8
				// (safetensors' JSON, GGUF); protobuf strings are UTF-8.
				err = w.r.ErrorAt(f.at, "tensor name %q is not valid UTF-8", t.name)
			}
		case tensorDocString:
			t.docString, err = w.str(f, maxDocBytes, "tensor doc_string")
		case tensorRawData:
			if f.typ != protowire.BytesType {
				return w.r.ErrorAt(f.at, "raw_data has wire type %d", f.typ)
			}
			t.hasRaw, t.rawOff, t.rawLen = true, f.off, f.size
		case tensorExternalData:
			if len(t.external) >= maxExternalKVs {
				return w.r.ErrorAt(f.at, "more than %d external_data entries", maxExternalKVs)
			}
			err = w.message(f, "external_data", func(s *wire) error {
				kv, err := s.keyValue()
				t.external = append(t.external, kv)
				return err
			})
		case tensorDataLocation:
			t.dataLocation = f.u
		case tensorStringData:
			t.otherData = f.num
		case tensorFloatData, tensorInt32Data, tensorInt64Data, tensorDoubleData, tensorUint64Data:
			err = t.addSegment(w, f)
		}
		return err
	})
	if err != nil {
		if fe, ok := err.(*binio.FormatError); ok && fe.Tensor == "" {
			fe.Tensor = t.name
		}
		return nil, err
	}
	return t, nil
}

// ints reads a repeated int64 field, packed or not.
func (w *wire) ints(f field, add func(uint64) error) error {
	if f.typ == protowire.VarintType {
		return add(f.u)
	}
	if f.typ != protowire.BytesType {
		return w.r.ErrorAt(f.at, "repeated integer field has wire type %d", f.typ)
	}
	s, err := w.enter(f)
	if err != nil {
		return err
	}
	for s.more() {
		v, err := s.varint("packed integer")
		if err != nil {
			return err
		}
		if err := add(v); err != nil {
			return err
		}
	}
	return w.leave(f)
}

// addSegment records where a typed data field's values lie, counting them.
func (t *initializer) addSegment(w *wire, f field) error {
	scalar := wireFor[f.num]
	if f.typ == scalar {
		// An unpacked element: extend the current run when it continues it.
		end := w.r.Offset()
		if n := len(t.typed); n > 0 && !t.typed[n-1].packed && t.typed[n-1].field == f.num && t.typed[n-1].end == f.at {
			t.typed[n-1].end = end
			t.typed[n-1].count++
			return nil
		}
		return t.appendSegment(w, f, segment{field: f.num, off: f.at, end: end, count: 1})
	}
	if f.typ != protowire.BytesType {
		return w.r.ErrorAt(f.at, "data field %d has wire type %d", f.num, f.typ)
	}
	seg := segment{field: f.num, packed: true, off: f.off, end: f.off + f.size}
	switch scalar {
	case protowire.Fixed32Type, protowire.Fixed64Type:
		width := int64(4)
		if scalar == protowire.Fixed64Type {
			width = 8
		}
		if f.size%width != 0 {
			return w.r.ErrorAt(f.at, "packed field %d of %d bytes is not a whole number of %d-byte values", f.num, f.size, width)
		}
		seg.count = uint64(f.size / width)
	default:
		n, err := countVarints(w.r, f)
		if err != nil {
			return err
		}
		seg.count = n
	}
	return t.appendSegment(w, f, seg)
}

func (t *initializer) appendSegment(w *wire, f field, s segment) error {
	if len(t.typed) >= maxSegments {
		return w.r.ErrorAt(f.at, "typed data is split into more than %d runs", maxSegments)
	}
	t.typed = append(t.typed, s)
	return nil
}

// countVarints counts the varints of a packed payload: bytes without the
// continuation bit. The last byte must end a varint.
func countVarints(r *binio.Reader, f field) (uint64, error) {
	back := r.Offset()
	if err := r.SeekTo(f.off); err != nil {
		return 0, err
	}
	var n uint64
	var last byte
	run := 0
	for i := int64(0); i < f.size; i++ {
		b, err := r.U8("packed varints")
		if err != nil {
			return 0, err
		}
		run++
		if b < 0x80 {
			n++
			run = 0
		} else if run >= binary10 {
			return 0, r.ErrorAt(r.Offset()-1, "varint longer than 10 bytes")
		}
		last = b
	}
	if f.size > 0 && last >= 0x80 {
		return 0, r.ErrorAt(f.off+f.size-1, "packed field %d ends inside a varint", f.num)
	}
	return n, r.SeekTo(back)
}

func (m *model) String() string {
	return fmt.Sprintf("onnx ir %d, %d initializers", m.irVersion, len(m.inits))
}
