package apsim

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/sluice-ml/sluice/sdk/binio"
	"github.com/sluice-ml/sluice/sdk/codec"
	"github.com/sluice-ml/sluice/sdk/plugin"
	st "github.com/sluice-ml/sluice/sdk/safetensors"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// Errors a load reports when a check fails, matched with errors.Is.
var (
	// ErrDigest: the data or the tensor table do not match the file's
	// sha256 (the file is damaged or was modified).
	ErrDigest = errors.New("SHA-256 mismatch: the file is damaged or was modified")
	// ErrUnsigned: a key was given but the checkpoint carries no signature.
	ErrUnsigned = errors.New("the checkpoint is not signed")
	// ErrSignature: the signature does not match the key (signed with
	// another key, or changed after signing).
	ErrSignature = errors.New("the signature does not match the key: the checkpoint was signed with another key or changed after signing")
	// ErrMixedShards: the shards of a set do not belong together.
	ErrMixedShards = errors.New("the shards do not belong to one checkpoint")
)

// integrityError is a failed integrity or signature check; it counts as
// bad input.
type integrityError struct {
	file string
	err  error
	msg  string
}

func (e *integrityError) Error() string {
	s := e.file + ": " + e.err.Error()
	if e.msg != "" {
		s += " (" + e.msg + ")"
	}
	return s
}
func (e *integrityError) Unwrap() error  { return e.err }
func (e *integrityError) BadInput() bool { return true }

// qtensorPart is a QTensor of a file: its geometry, unit and the two
// container entries that hold it.
type qtensorPart struct {
	q      *codec.QTensor
	unit   string
	codes  *st.Entry
	scales *st.Entry
}

// file is one parsed apsim file.
type file struct {
	path   string
	r      io.ReaderAt
	size   int64
	header *st.Header

	shard, shards int // 0, 0 when not part of a set
	sha256        string
	signature     string
	keyID         string
	units         map[string]string // plain tensor → canonical dimension vector
	qtensors      map[string]*qtensorPart
	companions    map[string]bool // names of entries that belong to a QTensor
	metadata      tensor.Metadata
}

// parseFile reads and checks the header and apsim metadata of a file of the
// given size. It reads only the header.
func parseFile(r io.ReaderAt, size int64, name string) (*file, error) {
	h, err := st.ReadHeader(r, size, name)
	if err != nil {
		return nil, err
	}
	f := &file{path: name, r: r, size: size, header: h}
	if err := f.checkEntryKeys(); err != nil {
		return nil, err
	}
	if err := f.parseMetadata(); err != nil {
		return nil, err
	}
	return f, nil
}

// checkEntryKeys makes sure every tensor entry of the header spells its keys
// exactly "dtype", "shape" and "data_offsets", as the reference reader
// requires: Go's JSON decoding matches struct fields regardless of case, and
// the digest covers what the keys say, not how they are spelled.
func (f *file) checkEntryKeys() error {
	raw := make([]byte, f.header.HeaderLen)
	if _, err := f.r.ReadAt(raw, 8); err != nil {
		return &binio.FormatError{File: f.path, Offset: 8, Msg: "reading the header", Err: err}
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return &binio.FormatError{File: f.path, Offset: 8, Msg: "header is not valid JSON", Err: err}
	}
	for name, v := range top {
		if name == st.MetadataKey {
			continue
		}
		if err := exactKeys(v, "dtype", "shape", "data_offsets"); err != nil {
			return &binio.FormatError{File: f.path, Offset: 8, Tensor: name, Msg: err.Error()}
		}
	}
	return nil
}

// exactKeys checks that the JSON object raw has exactly the given keys,
// spelled exactly so.
func exactKeys(raw json.RawMessage, keys ...string) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return fmt.Errorf("not a JSON object")
	}
	for _, k := range keys {
		if _, ok := obj[k]; !ok {
			return fmt.Errorf("needs the key %q", k)
		}
	}
	if len(obj) != len(keys) {
		return fmt.Errorf("has keys other than %s", strings.Join(keys, ", "))
	}
	return nil
}

func (f *file) errorf(format string, args ...any) error {
	// Metadata lives in the JSON header, which starts at byte 8.
	return &binio.FormatError{File: f.path, Offset: 8, Msg: fmt.Sprintf(format, args...)}
}

func isLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func (f *file) parseMetadata() error {
	md := f.header.Metadata
	if md == nil || md[KeyFormat] != FormatName {
		return f.errorf("not an apsim checkpoint: __metadata__ has no format = %q (a plain safetensors file is read by the safetensors source)", FormatName)
	}
	if v := md[KeyVersion]; v != FormatVersion {
		return f.errorf("apsim format version %q is not supported (this reader knows version %s)", v, FormatVersion)
	}
	var unknown []string
	for k := range md {
		if !knownKeys[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return f.errorf("__metadata__ has keys apsim version 1 does not define: %.200q", strings.Join(unknown, ", "))
	}
	for _, k := range []string{KeyApsi, KeyUnits, KeyQTensors, KeyMetadata, KeySHA256} {
		if _, ok := md[k]; !ok {
			return f.errorf("__metadata__ lacks the %q key", k)
		}
	}
	f.sha256 = md[KeySHA256]
	if !isLowerHex(f.sha256, 64) {
		return f.errorf("sha256 %.80q is not 64 lowercase hex digits", f.sha256)
	}
	sig, hasSig := md[KeySignature]
	keyID, hasKeyID := md[KeyKeyID]
	if hasSig != hasKeyID {
		return f.errorf("signature and key_id must appear together")
	}
	if hasSig && !isLowerHex(sig, 64) {
		return f.errorf("signature is not 64 lowercase hex digits")
	}
	f.signature, f.keyID = sig, keyID
	if s, ok := md[KeyShard]; ok {
		i, n, valid := tensor.ParseShard(s)
		if !valid || n < 2 || n > maxShards || tensor.FormatShard(i, n) != s {
			return f.errorf("shard %.40q is not \"i/N\" with 1 ≤ i ≤ N, 2 ≤ N ≤ %d", s, maxShards)
		}
		if hasSig {
			return f.errorf("a shard carries no signature; the index of its set does")
		}
		f.shard, f.shards = i, n
	}
	entries := make(map[string]*st.Entry, len(f.header.Tensors))
	for i := range f.header.Tensors {
		entries[f.header.Tensors[i].Name] = &f.header.Tensors[i]
	}

	var qts map[string]qtensorEntry
	if err := decodeStrict(md[KeyQTensors], &qts); err != nil || qts == nil {
		return f.errorf("qtensors is not a JSON object of QTensor entries: %v", err)
	}
	f.qtensors = make(map[string]*qtensorPart, len(qts))
	f.companions = make(map[string]bool, 2*len(qts))
	for name, e := range qts {
		q, err := e.qtensor()
		if err != nil {
			return &binio.FormatError{File: f.path, Offset: 8, Tensor: name, Msg: "qtensors: " + err.Error()}
		}
		codes, scales := entries[name], entries[name+ScaleSuffix]
		if codes == nil || scales == nil {
			return &binio.FormatError{File: f.path, Offset: 8, Tensor: name, Msg: fmt.Sprintf("QTensor needs the tensors %q and %q in the table", name, name+ScaleSuffix)}
		}
		if codes.DType != q.Format().CodeDType || !slices.Equal(codes.Shape, q.CodesShape()) {
			return &binio.FormatError{File: f.path, Offset: 8, Tensor: name, Msg: fmt.Sprintf("%s codes must be %s %v, the table says %s %v", e.Format, q.Format().CodeDType, q.CodesShape(), codes.DType, codes.Shape)}
		}
		if scales.DType != tensor.F32 || !slices.Equal(scales.Shape, q.ScaleShape()) {
			return &binio.FormatError{File: f.path, Offset: 8, Tensor: name, Msg: fmt.Sprintf("scales must be f32 %v, the table says %s %v", q.ScaleShape(), scales.DType, scales.Shape)}
		}
		if f.companions[name] || f.companions[name+ScaleSuffix] {
			return &binio.FormatError{File: f.path, Offset: 8, Tensor: name, Msg: "QTensor entries overlap"}
		}
		unit := ""
		if e.Unit != nil {
			unit, _ = canonicalUnit(string(e.Unit))
		}
		f.qtensors[name] = &qtensorPart{q: q, unit: unit, codes: codes, scales: scales}
		f.companions[name], f.companions[name+ScaleSuffix] = true, true
	}

	var units map[string]json.RawMessage
	if err := decodeStrict(md[KeyUnits], &units); err != nil || units == nil {
		return f.errorf("units is not a JSON object of dimension vectors: %v", err)
	}
	f.units = make(map[string]string, len(units))
	for name, raw := range units {
		if entries[name] == nil || f.companions[name] {
			return &binio.FormatError{File: f.path, Offset: 8, Tensor: name, Msg: "units names a tensor that is not a plain tensor of this file (a QTensor's unit goes in its qtensors entry)"}
		}
		u, err := canonicalUnit(string(raw))
		if err != nil {
			return &binio.FormatError{File: f.path, Offset: 8, Tensor: name, Msg: "units: " + err.Error()}
		}
		f.units[name] = u
	}

	m, err := decodeMetadata(md[KeyMetadata])
	if err != nil {
		return f.errorf("metadata: %v", err)
	}
	f.metadata = m
	return nil
}

// digest computes the file's SHA-256 over the canonical table and the data.
func (f *file) digest() ([32]byte, error) {
	h := newDigest(f.header.Metadata, f.header.Tensors)
	data := io.NewSectionReader(f.r, f.header.DataOffset, f.size-f.header.DataOffset)
	buf := make([]byte, 1<<20)
	if _, err := io.CopyBuffer(h, data, buf); err != nil {
		return [32]byte{}, fmt.Errorf("%s: reading tensor data: %w", f.path, err)
	}
	var d [32]byte
	h.Sum(d[:0])
	return d, nil
}

// verifyDigest recomputes the digest and compares it with the sha256 key.
func (f *file) verifyDigest() error {
	d, err := f.digest()
	if err != nil {
		return err
	}
	if hex.EncodeToString(d[:]) != f.sha256 {
		return &integrityError{file: f.path, err: ErrDigest}
	}
	return nil
}

// declaredDigest returns the sha256 key as bytes.
func (f *file) declaredDigest() [32]byte {
	var d [32]byte
	hex.Decode(d[:], []byte(f.sha256))
	return d
}

// openApsim opens and parses the file at path. The caller closes the returned
// *os.File.
func openApsim(path string) (*file, *os.File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, nil, &plugin.InputError{File: path, Msg: "cannot open", Err: err}
	}
	st, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, nil, &plugin.InputError{File: path, Msg: "cannot stat", Err: err}
	}
	if !st.Mode().IsRegular() {
		fh.Close()
		return nil, nil, &plugin.InputError{File: path, Msg: "is not a regular file"}
	}
	f, err := parseFile(fh, st.Size(), path)
	if err != nil {
		fh.Close()
		return nil, nil, err
	}
	return f, fh, nil
}

// physicalSize is the sum of the sizes of the file's container entries.
func (f *file) physicalSize() uint64 {
	return uint64(f.size - f.header.DataOffset)
}
