package apsim

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/sluice-ml/sluice/sdk/codec"
	st "github.com/sluice-ml/sluice/sdk/safetensors"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// Keys of an apsim file's __metadata__. Every value is a string.
const (
	KeyFormat    = "format"    // FormatName
	KeyVersion   = "version"   // FormatVersion
	KeyApsi      = "apsi"      // the writer and its version
	KeyUnits     = "units"     // JSON: plain tensor name → dimension vector
	KeyQTensors  = "qtensors"  // JSON: QTensor name → its parameters
	KeyMetadata  = "metadata"  // JSON: the checkpoint's metadata
	KeySHA256    = "sha256"    // hex SHA-256 of the canonical table and the data
	KeyShard     = "shard"     // "i/N" in sharded sets
	KeyKeyID     = "key_id"    // name of the signing key (never the key), when signed
	KeySignature = "signature" // hex HMAC-SHA256, in signed single files
)

// FormatName and FormatVersion are the values of the format and version keys.
const (
	FormatName    = "apsi-model"
	FormatVersion = "1"
)

// ScaleSuffix names the companion tensor that holds a QTensor's scales.
const ScaleSuffix = "__qscale"

// Writer is the value of the apsi key in files this package writes.
const Writer = "sluice-apsim " + Version

var knownKeys = map[string]bool{
	KeyFormat: true, KeyVersion: true, KeyApsi: true, KeyUnits: true, KeyQTensors: true,
	KeyMetadata: true, KeySHA256: true, KeyShard: true, KeyKeyID: true, KeySignature: true,
}

// Limits on what a file may declare, beyond the container's own.
const (
	maxRank      = 64       // dimensions of a QTensor
	maxUnitDims  = 64       // entries of a dimension vector
	maxJSONDepth = 16       // nesting of metadata arrays
	maxIndexSize = 64 << 20 // bytes of an index file
	maxShards    = 99999    // shards in a set (five digits in the names)
)

// qtensorEntry is one member of the qtensors JSON.
type qtensorEntry struct {
	Format     string          `json:"format"`
	Shape      []uint64        `json:"shape"`
	Axis       *int            `json:"axis,omitempty"`
	Block      *uint64         `json:"block,omitempty"`
	Packing    string          `json:"packing"`
	ScaleDType string          `json:"scale_dtype"`
	ScaleShape []uint64        `json:"scale_shape"`
	Unit       json.RawMessage `json:"unit,omitempty"`
}

func newQTensorEntry(q *codec.QTensor, unit string) qtensorEntry {
	e := qtensorEntry{
		Format:     q.Format().Name,
		Shape:      q.Shape(),
		Packing:    q.Format().Packing,
		ScaleDType: "F32",
		ScaleShape: q.ScaleShape(),
	}
	if a := q.Axis(); a >= 0 {
		e.Axis = &a
	}
	if b := q.Block(); b != 0 {
		e.Block = &b
	}
	if unit != "" {
		e.Unit = json.RawMessage(unit)
	}
	return e
}

// qtensor checks an entry against the codec and returns its geometry.
func (e *qtensorEntry) qtensor() (*codec.QTensor, error) {
	f, err := codec.ParseQFormat(e.Format)
	if err != nil || f.Name != e.Format {
		return nil, fmt.Errorf("unknown QTensor format %q", e.Format)
	}
	if e.Shape == nil || e.ScaleShape == nil {
		return nil, fmt.Errorf("a QTensor entry needs shape and scale_shape")
	}
	if len(e.Shape) > maxRank {
		return nil, fmt.Errorf("shape has %d dimensions (at most %d)", len(e.Shape), maxRank)
	}
	var s codec.QScaling
	if e.Axis != nil {
		if *e.Axis < 0 {
			return nil, fmt.Errorf("axis %d is negative", *e.Axis)
		}
		s.PerAxis, s.Axis = true, *e.Axis
	}
	if e.Block != nil {
		if *e.Block == 0 {
			return nil, fmt.Errorf("block size 0")
		}
		s.Block = *e.Block
	}
	q, err := codec.NewQTensor(f.DType, e.Shape, s)
	if err != nil {
		return nil, err
	}
	if e.Packing != f.Packing {
		return nil, fmt.Errorf("packing %q, but %s codes are packed %q", e.Packing, e.Format, f.Packing)
	}
	if e.ScaleDType != "F32" {
		return nil, fmt.Errorf("scale_dtype %q (only F32)", e.ScaleDType)
	}
	if !slices.Equal(e.ScaleShape, q.ScaleShape()) {
		return nil, fmt.Errorf("scale_shape %v, but its shape and scaling give %v", e.ScaleShape, q.ScaleShape())
	}
	if e.Unit != nil {
		if _, err := canonicalUnit(string(e.Unit)); err != nil {
			return nil, err
		}
	}
	return q, nil
}

// canonicalUnit checks that s is a JSON array of at most maxUnitDims numbers
// and returns it without insignificant whitespace.
func canonicalUnit(s string) (string, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v []json.Number
	if err := dec.Decode(&v); err != nil || v == nil || dec.More() {
		return "", fmt.Errorf("unit %.80q is not a JSON array of numbers (a dimension vector)", s)
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", fmt.Errorf("unit %.80q has bytes after its JSON array", s)
	}
	if len(v) > maxUnitDims {
		return "", fmt.Errorf("unit has %d dimensions (at most %d)", len(v), maxUnitDims)
	}
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		return "", err
	}
	return b.String(), nil
}

// decodeStrict decodes one JSON value into v, refusing unknown fields and
// trailing bytes.
func decodeStrict(s string, v any) error {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("unexpected data after the JSON value")
	}
	return nil
}

// u64 appends v little-endian.
func u64(b []byte, v uint64) []byte { return binary.LittleEndian.AppendUint64(b, v) }

// lenString appends a length-prefixed string.
func lenString(b []byte, s string) []byte { return append(u64(b, uint64(len(s))), s...) }

// canonicalMap appends a map as its entry count followed by its entries in
// ascending byte order of their keys, each key and value length-prefixed.
func canonicalMap(b []byte, m map[string]string) []byte {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b = u64(b, uint64(len(keys)))
	for _, k := range keys {
		b = lenString(lenString(b, k), m[k])
	}
	return b
}

// Domain-separation prefixes of the hashed and signed byte strings.
const (
	tablePrefix     = "apsim/1 table\n"
	signaturePrefix = "apsim/1 signature\n"
)

// canonicalTable returns the bytes hashed before the data: the prefix, the
// metadata without sha256 and signature, and the tensor table in data order
// (by begin offset, then end offset, then name).
func canonicalTable(meta map[string]string, entries []st.Entry) []byte {
	m := make(map[string]string, len(meta))
	for k, v := range meta {
		if k != KeySHA256 && k != KeySignature {
			m[k] = v
		}
	}
	b := canonicalMap([]byte(tablePrefix), m)
	sorted := append([]st.Entry(nil), entries...)
	sort.Slice(sorted, func(i, j int) bool {
		a, c := sorted[i], sorted[j]
		if a.Begin != c.Begin {
			return a.Begin < c.Begin
		}
		if a.End != c.End {
			return a.End < c.End
		}
		return a.Name < c.Name
	})
	b = u64(b, uint64(len(sorted)))
	for _, e := range sorted {
		info, _ := e.DType.Info()
		b = lenString(b, e.Name)
		b = lenString(b, info.Safetensors)
		b = u64(b, uint64(len(e.Shape)))
		for _, d := range e.Shape {
			b = u64(b, d)
		}
		b = u64(u64(b, e.Begin), e.End)
	}
	return b
}

// newDigest returns a SHA-256 that has consumed the canonical table; the
// caller feeds it the data section.
func newDigest(meta map[string]string, entries []st.Entry) hash.Hash {
	h := sha256.New()
	h.Write(canonicalTable(meta, entries))
	return h
}

// signedShard is one shard as the signature covers it.
type signedShard struct {
	File   string // the shard's file name; empty for a single file
	Digest [32]byte
}

// signingInput returns the bytes an HMAC signs: the prefix, every shard's
// file name and digest in order, the signed metadata and the weight map
// (sorted by tensor name; empty for a single file).
func signingInput(shards []signedShard, meta map[string]string, weightMap map[string]string) []byte {
	b := u64([]byte(signaturePrefix), uint64(len(shards)))
	for _, s := range shards {
		b = append(lenString(b, s.File), s.Digest[:]...)
	}
	m := make(map[string]string, len(meta))
	for k, v := range meta {
		if k != KeySignature {
			m[k] = v
		}
	}
	b = canonicalMap(b, m)
	return canonicalMap(b, weightMap)
}

// physical returns the container entries a tensor occupies: itself, or a
// QTensor's codes and scales.
func physical(t *tensor.TensorInfo) ([]st.Tensor, *codec.QTensor, error) {
	if codec.IsQTensor(t.DType) {
		q, err := codec.QTensorOf(t)
		if err != nil {
			return nil, nil, err
		}
		if q.Size() != t.Size {
			return nil, nil, fmt.Errorf("tensor %q: %s %v needs %d bytes, size says %d", t.Name, t.DType, t.Shape, q.Size(), t.Size)
		}
		return []st.Tensor{
			{Name: t.Name, DType: q.Format().CodeDType, Shape: q.CodesShape(), Size: q.CodesSize()},
			{Name: t.Name + ScaleSuffix, DType: tensor.F32, Shape: q.ScaleShape(), Size: q.ScaleSize()},
		}, q, nil
	}
	return []st.Tensor{{Name: t.Name, DType: t.DType, Shape: t.Shape, Size: t.Size}}, nil, nil
}
