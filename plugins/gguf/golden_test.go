package gguf

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/sdk/binio"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// refDump is ggml's reading of a reference file (sample.json, align64.json).
type refDump struct {
	FileSize   int64  `json:"file_size"`
	Version    uint32 `json:"version"`
	Alignment  uint64 `json:"alignment"`
	DataOffset uint64 `json:"data_offset"`
	NKV        int    `json:"n_kv"`
	NTensors   int    `json:"n_tensors"`
	KV         []struct {
		Key     string            `json:"key"`
		Type    string            `json:"type"`
		Elem    string            `json:"elem_type"`
		N       int               `json:"n"`
		Payload string            `json:"payload_sha256"`
		Value   json.RawMessage   `json:"value"`
		Values  []json.RawMessage `json:"values"`
	} `json:"kv"`
	Tensors []struct {
		Name      string   `json:"name"`
		Type      string   `json:"type"`
		TypeID    uint32   `json:"type_id"`
		Ne        []uint64 `json:"ne"`
		Offset    uint64   `json:"offset"`
		AbsOffset uint64   `json:"abs_offset"`
		NBytes    uint64   `json:"nbytes"`
		SHA256    string   `json:"sha256"`
	} `json:"tensors"`
}

var refTypeNames = map[string]tensor.ValueType{
	"u8": tensor.TypeU8, "i8": tensor.TypeI8, "u16": tensor.TypeU16, "i16": tensor.TypeI16,
	"u32": tensor.TypeU32, "i32": tensor.TypeI32, "f32": tensor.TypeF32, "bool": tensor.TypeBool,
	"str": tensor.TypeString, "arr": tensor.TypeArray, "u64": tensor.TypeU64, "i64": tensor.TypeI64,
	"f64": tensor.TypeF64,
}

// checkRefScalar compares one scalar from the dump with a value of type vt.
func checkRefScalar(t *testing.T, where string, vt tensor.ValueType, raw json.RawMessage, got tensor.Value) {
	t.Helper()
	if got.Type() != vt {
		t.Errorf("%s: type %s, want %s", where, got.Type(), vt)
		return
	}
	switch vt {
	case tensor.TypeF32, tensor.TypeF64:
		var fv struct {
			Bits string `json:"bits"`
		}
		if err := json.Unmarshal(raw, &fv); err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		want, err := strconv.ParseUint(strings.TrimPrefix(fv.Bits, "0x"), 16, 64)
		if err != nil {
			t.Fatalf("%s: bits %q: %v", where, fv.Bits, err)
		}
		if got.Bits() != want {
			t.Errorf("%s: bits 0x%x, want 0x%x", where, got.Bits(), want)
		}
	case tensor.TypeString:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		if g, _ := got.Str(); g != s {
			t.Errorf("%s: %q, want %q", where, g, s)
		}
	case tensor.TypeBool:
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		if g, _ := got.Bool(); g != b {
			t.Errorf("%s: %v, want %v", where, g, b)
		}
	default:
		s := string(raw)
		var g string
		if i, ok := got.Int(); ok && (vt == tensor.TypeI8 || vt == tensor.TypeI16 || vt == tensor.TypeI32 || vt == tensor.TypeI64) {
			g = strconv.FormatInt(i, 10)
		} else {
			u, _ := got.Uint()
			g = strconv.FormatUint(u, 10)
		}
		if g != s {
			t.Errorf("%s: %s, want %s", where, g, s)
		}
	}
}

// payloadSHA256 hashes an array's payload as the reference dump does.
func payloadSHA256(v tensor.Value) string {
	h := sha256.New()
	if strs, ok := v.StringSlice(); ok {
		var n [8]byte
		for _, s := range strs {
			binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
			h.Write(n[:])
			io.WriteString(h, s)
		}
	} else if raw, ok := v.Raw(); ok {
		h.Write(raw)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func checkAgainstDump(t *testing.T, path, dumpPath string) {
	data, err := os.ReadFile(dumpPath)
	if err != nil {
		t.Fatal(err)
	}
	var want refDump
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatalf("%s: %v", dumpPath, err)
	}
	f, fh, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if f.Size != want.FileSize || f.Version != want.Version || f.Alignment != want.Alignment || f.DataOffset != want.DataOffset {
		t.Errorf("size/version/alignment/data offset = %d/%d/%d/%d, want %d/%d/%d/%d",
			f.Size, f.Version, f.Alignment, f.DataOffset, want.FileSize, want.Version, want.Alignment, want.DataOffset)
	}
	if f.Metadata.Len() != want.NKV || len(want.KV) != want.NKV {
		t.Fatalf("%d keys, dump has %d (n_kv %d)", f.Metadata.Len(), len(want.KV), want.NKV)
	}
	for i, kv := range want.KV {
		if f.Metadata.Keys()[i] != kv.Key {
			t.Errorf("key %d is %q, want %q", i, f.Metadata.Keys()[i], kv.Key)
			continue
		}
		v, _ := f.Metadata.Get(kv.Key)
		vt, ok := refTypeNames[kv.Type]
		if !ok {
			t.Fatalf("dump type %q unknown", kv.Type)
		}
		if vt != tensor.TypeArray {
			checkRefScalar(t, kv.Key, vt, kv.Value, v)
			continue
		}
		et := refTypeNames[kv.Elem]
		if v.Type() != tensor.TypeArray || v.Elem() != et || v.Len() != kv.N {
			t.Errorf("%s: %s of %s × %d, want array of %s × %d", kv.Key, v.Type(), v.Elem(), v.Len(), et, kv.N)
			continue
		}
		if got := payloadSHA256(v); got != kv.Payload {
			t.Errorf("%s: payload sha256 %s, want %s", kv.Key, got, kv.Payload)
		}
		for j, raw := range kv.Values {
			checkRefScalar(t, fmt.Sprintf("%s[%d]", kv.Key, j), et, raw, v.Index(j))
		}
	}
	if len(f.Tensors) != want.NTensors || len(want.Tensors) != want.NTensors {
		t.Fatalf("%d tensors, want %d", len(f.Tensors), want.NTensors)
	}
	for i, wt := range want.Tensors {
		gt := &f.Tensors[i]
		if gt.Name != wt.Name || string(gt.DType) != wt.Type || gt.Type != wt.TypeID || gt.Offset != wt.Offset ||
			f.AbsOffset(gt) != wt.AbsOffset || gt.Size != wt.NBytes || !reflect.DeepEqual(gt.Ne, wt.Ne) {
			t.Errorf("tensor %d = %s %s(%d) ne %v off %d abs %d size %d, want %s %s(%d) ne %v off %d abs %d size %d", i,
				gt.Name, gt.DType, gt.Type, gt.Ne, gt.Offset, f.AbsOffset(gt), gt.Size,
				wt.Name, wt.Type, wt.TypeID, wt.Ne, wt.Offset, wt.AbsOffset, wt.NBytes)
		}
		if got, want := gt.Shape(), ShapeFromNe(wt.Ne); !reflect.DeepEqual(got, want) {
			t.Errorf("tensor %s: shape %v, want %v", gt.Name, got, want)
		}
		h := sha256.New()
		if _, err := io.Copy(h, f.Section(gt)); err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != wt.SHA256 {
			t.Errorf("tensor %s: sha256 %s, want %s", gt.Name, got, wt.SHA256)
		}
	}
}

func TestReadMatchesGGML(t *testing.T) {
	ref := refDir(t)
	for _, name := range []string{"sample", "align64"} {
		t.Run(name, func(t *testing.T) {
			checkAgainstDump(t, filepath.Join(ref, name+".gguf"), filepath.Join(ref, name+".json"))
			if err := mustOpen(t, filepath.Join(ref, name+".gguf")).CheckPadding(); err != nil {
				t.Errorf("CheckPadding: %v", err)
			}
		})
	}
}

func mustOpen(t *testing.T, path string) *File {
	t.Helper()
	f, fh, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fh.Close() })
	return f
}

// TestReferenceVerdicts checks that every reference file gets ggml's verdict
// (README of ../shared/ref), except nested.gguf, read as gguf-py reads it.
func TestReferenceVerdicts(t *testing.T) {
	ref := refDir(t)
	refused := map[string]string{
		"badmagic.gguf": "not a GGUF file",
		"v1.gguf":       "version 1",
		"v4.gguf":       "version 4",
		"naive64.gguf":  "expected",
		"trunc.gguf":    "past the end",
	}
	for name, msg := range refused {
		_, _, err := OpenFile(filepath.Join(ref, name))
		if err == nil {
			t.Errorf("%s: accepted, ggml refuses it", name)
			continue
		}
		if !errors.Is(err, binio.ErrFormat) || !strings.Contains(err.Error(), msg) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: error %q should be a FormatError naming the file and saying %q", name, err, msg)
		}
	}

	v2 := mustOpen(t, filepath.Join(ref, "v2.gguf"))
	sample := mustOpen(t, filepath.Join(ref, "sample.gguf"))
	if v2.Version != 2 || !v2.Metadata.Equal(&sample.Metadata) || len(v2.Tensors) != len(sample.Tensors) {
		t.Errorf("v2.gguf should read like sample.gguf")
	}

	nopad := mustOpen(t, filepath.Join(ref, "nopad.gguf"))
	if err := nopad.CheckPadding(); err == nil {
		t.Errorf("nopad.gguf: CheckPadding accepted a file whose last tensor lacks its padding")
	}
	// The source refuses it, as ggml refuses to load its data.
	src, _ := NewSource(&SourceConfig{Path: filepath.Join(ref, "nopad.gguf")})
	defer src.Close()
	if _, err := src.Describe(context.Background()); !errors.Is(err, binio.ErrFormat) || !strings.Contains(err.Error(), "padding") {
		t.Errorf("nopad.gguf: Describe: %v", err)
	}

	nested := mustOpen(t, filepath.Join(ref, "nested.gguf"))
	v, ok := nested.Metadata.Get("test.nested")
	items, isNested := v.Items()
	if !ok || !isNested || len(items) != 2 {
		t.Fatalf("nested.gguf: test.nested = %v, want [[1 2] [3]]", v)
	}
	if got := fmt.Sprint(items[0].Index(0), items[0].Index(1), items[1].Index(0)); got != "1 2 3" || items[0].Elem() != tensor.TypeI32 {
		t.Errorf("nested.gguf: items %v %v", items[0], items[1])
	}
}
