package apsim

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-ml/sluice/sdk/binio"
	"github.com/sluice-ml/sluice/sdk/codec"
	"github.com/sluice-ml/sluice/sdk/keyring"
	"github.com/sluice-ml/sluice/sdk/plugin"
	st "github.com/sluice-ml/sluice/sdk/safetensors"
	"github.com/sluice-ml/sluice/sdk/tensor"
)

// smallCheckpoint has a plain tensor with a unit, a QTensor and metadata:
// every part of the header is exercised and the file stays small.
func smallCheckpoint(t *testing.T) *ckptData {
	rng := rand.New(rand.NewPCG(11, 12))
	c := &ckptData{m: &tensor.Manifest{}, data: map[string][]byte{}}
	c.addPlain(t, rng, "a.w", tensor.F16, []uint64{3}, "[0,1]")
	c.addQ(t, rng, "a.q", codec.QTInt4, []uint64{2, 3}, codec.QScaling{PerAxis: true, Axis: 0}, "[1]")
	c.m.Metadata.Set("n", tensor.U32Value(7))
	return c
}

// checkBytes runs the load-time checks on a file held in memory.
func checkBytes(b []byte, verify bool, key *keyring.Key) error {
	f, err := parseFile(bytes.NewReader(b), int64(len(b)), "mem.apsim")
	if err != nil {
		return err
	}
	c := &checkpoint{files: []*openFile{{file: f}}}
	return c.checkSingle(context.Background(), verify, key)
}

// TestEveryByteFlipIsDetected flips, at every offset of a small file, each
// single bit and the whole byte, and loads the result with verification on.
func TestEveryByteFlipIsDetected(t *testing.T) {
	c := smallCheckpoint(t)
	key, _ := keyring.Shared("team secret")
	for _, signed := range []bool{false, true} {
		cfg := SinkConfig{Path: tempPath(t, "small.apsim")}
		var k *keyring.Key
		if signed {
			cfg.Key = "team secret"
			k = key
		}
		mustSave(t, cfg, c)
		orig, err := os.ReadFile(cfg.Path)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkBytes(orig, true, k); err != nil {
			t.Fatalf("the unmodified file fails: %v", err)
		}
		mod := make([]byte, len(orig))
		missed := 0
		for off := range orig {
			for _, mask := range []byte{1, 2, 4, 8, 16, 32, 64, 128, 0xff} {
				copy(mod, orig)
				mod[off] ^= mask
				err := checkBytes(mod, true, k)
				if err == nil {
					if missed < 10 {
						t.Errorf("signed=%v: flipping byte %d (%q) with %#x is not detected", signed, off, orig[off], mask)
					}
					missed++
					continue
				}
				if !plugin.IsBadInput(err) {
					t.Errorf("byte %d ^ %#x: error is not marked as bad input: %v", off, mask, err)
				}
			}
		}
		if missed > 0 {
			t.Errorf("signed=%v: %d of %d flips undetected", signed, missed, 9*len(orig))
		}
		t.Logf("signed=%v: %d flips over %d bytes all detected", signed, 9*len(orig), len(orig))
	}
}

func TestVerifyFalseSkipsTheDigest(t *testing.T) {
	c := smallCheckpoint(t)
	path := tempPath(t, "m.apsim")
	mustSave(t, SinkConfig{Path: path}, c)
	b, _ := os.ReadFile(path)
	b[len(b)-1] ^= 1 // a data byte
	os.WriteFile(path, b, 0o644)
	_, err := loadAll(t, SourceConfig{Path: path})
	if !errors.Is(err, ErrDigest) || !strings.Contains(err.Error(), path) {
		t.Errorf("default load of a damaged file: %v", err)
	}
	no := false
	if _, err := loadAll(t, SourceConfig{Path: path, Verify: &no}); err != nil {
		t.Errorf("verify = false still checks: %v", err)
	}
	// A key turns verification back on.
	if _, err := loadAll(t, SourceConfig{Path: path, Verify: &no, Key: []byte(`"s"`)}); !errors.Is(err, ErrDigest) {
		t.Errorf("verify = false with a key: %v", err)
	}
}

// resign rewrites a file's header after an edit: its digest recomputed (as
// anyone can), its signature kept.
func rehash(t *testing.T, b []byte, edit func(meta map[string]string, data []byte)) []byte {
	return rehashThen(t, b, edit, nil)
}

// rehashThen is rehash with a second edit of the metadata after the digest.
func rehashThen(t *testing.T, b []byte, edit func(meta map[string]string, data []byte), after func(meta map[string]string)) []byte {
	t.Helper()
	h, err := st.ReadHeader(bytes.NewReader(b), int64(len(b)), "x")
	if err != nil {
		t.Fatal(err)
	}
	data := append([]byte{}, b[h.DataOffset:]...)
	edit(h.Metadata, data)
	var ts []st.Tensor
	for _, e := range h.Tensors {
		ts = append(ts, st.Tensor{Name: e.Name, DType: e.DType, Shape: e.Shape, Size: e.Size()})
	}
	l, err := st.PlanLayout(ts, h.Metadata)
	if err != nil {
		t.Fatal(err)
	}
	dh := newDigest(h.Metadata, l.Tensors)
	dh.Write(data)
	h.Metadata[KeySHA256] = hex.EncodeToString(dh.Sum(nil))
	if after != nil {
		after(h.Metadata)
	}
	l, _ = st.PlanLayout(ts, h.Metadata)
	return append(l.Prefix, data...)
}

func TestSignatures(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	c := smallCheckpoint(t)
	const secret = "team secret 4f1c"
	shared := func(s string) []byte { return []byte(fmt.Sprintf("%q", s)) }

	signed := tempPath(t, "signed.apsim")
	mustSave(t, SinkConfig{Path: signed, Key: secret}, c)
	unsigned := tempPath(t, "unsigned.apsim")
	mustSave(t, SinkConfig{Path: unsigned}, c)
	user := tempPath(t, "user.apsim")
	mustSave(t, SinkConfig{Path: user, Sign: true}, c)
	keyPath, _ := keyring.UserKeyPath()
	if fi, err := os.Stat(keyPath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("per-user key: %v %v", fi, err)
	}

	ok := func(path string, key []byte) {
		t.Helper()
		got, err := loadAll(t, SourceConfig{Path: path, Key: key})
		if err != nil {
			t.Errorf("%s with key %s: %v", filepath.Base(path), key, err)
			return
		}
		if !strings.Contains(path, "edited") {
			sameCheckpoint(t, got, c)
		}
	}
	fails := func(path string, key []byte, want error) {
		t.Helper()
		_, err := loadAll(t, SourceConfig{Path: path, Key: key})
		if !errors.Is(err, want) {
			t.Errorf("%s with key %s: %v, want %v", filepath.Base(path), key, err, want)
		}
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("error reveals the key: %v", err)
		}
		if err != nil && !plugin.IsBadInput(err) {
			t.Errorf("error is not bad input: %v", err)
		}
	}
	ok(signed, shared(secret))
	ok(signed, nil) // no key: the digest is checked, the signature is not
	ok(user, []byte("true"))
	fails(signed, shared("another secret"), ErrSignature)
	fails(signed, []byte("true"), ErrSignature)
	fails(user, shared(secret), ErrSignature)
	fails(unsigned, shared(secret), ErrUnsigned)
	fails(unsigned, []byte("true"), ErrUnsigned)

	// Edits after signing: a changed data byte fails the digest; with the
	// digest recomputed, the signature; with the signature removed too, the
	// file is unsigned.
	orig, _ := os.ReadFile(signed)
	edited := tempPath(t, "edited.apsim")
	b := append([]byte{}, orig...)
	b[len(b)-1] ^= 0x10
	os.WriteFile(edited, b, 0o644)
	fails(edited, shared(secret), ErrDigest)
	os.WriteFile(edited, rehash(t, orig, func(_ map[string]string, data []byte) { data[len(data)-1] ^= 0x10 }), 0o644)
	ok(edited, nil)
	fails(edited, shared(secret), ErrSignature)
	os.WriteFile(edited, rehash(t, orig, func(m map[string]string, _ []byte) { m[KeyMetadata] = `{"n":{"type":"u32","value":8}}` }), 0o644)
	fails(edited, shared(secret), ErrSignature)
	os.WriteFile(edited, rehash(t, orig, func(m map[string]string, _ []byte) { m[KeyKeyID] = "user key" }), 0o644)
	fails(edited, shared(secret), ErrSignature)
	os.WriteFile(edited, rehash(t, orig, func(m map[string]string, _ []byte) { delete(m, KeySignature); delete(m, KeyKeyID) }), 0o644)
	fails(edited, shared(secret), ErrUnsigned)

	// Verify reports what it checked.
	k, _ := keyring.Shared(secret)
	r, err := Verify(context.Background(), signed, k)
	if err != nil || !r.Signed || !r.SignatureChecked || r.KeyID != keyring.SharedKeyID || len(r.Files) != 1 || r.Tensors != 2 {
		t.Errorf("Verify: %+v, %v", r, err)
	}
	if r, err := Verify(context.Background(), unsigned, nil); err != nil || r.Signed || r.SignatureChecked {
		t.Errorf("Verify unsigned: %+v, %v", r, err)
	}
}

func TestSigningKeyFromASignStage(t *testing.T) {
	c := smallCheckpoint(t)
	path := tempPath(t, "m.apsim")
	opts := plugin.BeginOptions{SigningKey: []byte("stage key bytes"), SigningKeyID: keyring.SharedKeyID}
	if _, err := save(t, SinkConfig{Path: path}, c, opts); err != nil {
		t.Fatal(err)
	}
	if _, err := loadAll(t, SourceConfig{Path: path, Key: []byte(`"stage key bytes"`)}); err != nil {
		t.Errorf("load with the stage's key: %v", err)
	}
	// A key in both places is refused, without echoing either.
	_, err := save(t, SinkConfig{Path: tempPath(t, "n.apsim"), Key: "config secret"}, c, opts)
	if !plugin.IsBadConfig(err) || strings.Contains(err.Error(), "config secret") || strings.Contains(err.Error(), "stage key bytes") {
		t.Errorf("two keys: %v", err)
	}
}

func TestKeysNeverShow(t *testing.T) {
	const secret = "s3cr3t-value"
	ctx := context.Background()
	s, err := NewSink(&SinkConfig{Path: tempPath(t, "m.apsim"), Key: secret})
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan(ctx, smallCheckpoint(t).m)
	if err != nil {
		t.Fatal(err)
	}
	src, err := OpenSource(&SourceConfig{Path: t.TempDir(), Key: []byte(`"` + secret + `"`)})
	if err != nil {
		t.Fatal(err)
	}
	_, derr := src.Describe(ctx)
	for _, out := range []string{fmt.Sprintf("%v %+v %#v", s, s, s), fmt.Sprintf("%v %+v %#v", p, p, p),
		fmt.Sprintf("%+v %#v", src, src), fmt.Sprint(derr)} {
		if strings.Contains(out, secret) {
			t.Errorf("the key shows in %q", out)
		}
	}
	signedNote := false
	for _, n := range p.Notes {
		signedNote = signedNote || strings.Contains(n.Msg, "signed with the shared secret")
	}
	if !signedNote {
		t.Errorf("plan notes %v do not say how the output is signed", p.Notes)
	}
	for _, bad := range []string{`""`, `3`, `{"k":1}`} {
		if _, err := OpenSource(&SourceConfig{Path: t.TempDir(), Key: []byte(bad)}); !plugin.IsBadConfig(err) {
			t.Errorf("key %s: %v", bad, err)
		}
	}
}

func TestMalformedMetadataIsRefused(t *testing.T) {
	c := smallCheckpoint(t)
	path := tempPath(t, "m.apsim")
	mustSave(t, SinkConfig{Path: path}, c)
	orig, _ := os.ReadFile(path)
	cases := []struct {
		name string
		edit func(m map[string]string)
		want string
	}{
		{"no format", func(m map[string]string) { delete(m, KeyFormat) }, "not an apsim checkpoint"},
		{"version 2", func(m map[string]string) { m[KeyVersion] = "2" }, "version \"2\" is not supported"},
		{"unknown key", func(m map[string]string) { m["extra"] = "x" }, "does not define"},
		{"no units", func(m map[string]string) { delete(m, KeyUnits) }, `lacks the "units" key`},
		{"upper-case sha", func(m map[string]string) { m[KeySHA256] = strings.ToUpper(m[KeySHA256]) }, "lowercase hex"},
		{"signature alone", func(m map[string]string) { m[KeySignature] = m[KeySHA256] }, "together"},
		{"shard 1/1", func(m map[string]string) { m[KeyShard] = "1/1" }, "shard"},
		{"shard 01/2", func(m map[string]string) { m[KeyShard] = "01/2" }, "shard"},
		{"units not JSON", func(m map[string]string) { m[KeyUnits] = "{" }, "units is not"},
		{"unit of a QTensor", func(m map[string]string) { m[KeyUnits] = `{"a.q":[1]}` }, "not a plain tensor"},
		{"unit of nothing", func(m map[string]string) { m[KeyUnits] = `{"zz":[1]}` }, "not a plain tensor"},
		{"unit not numbers", func(m map[string]string) { m[KeyUnits] = `{"a.w":["m"]}` }, "dimension vector"},
		{"unknown qtensor field", func(m map[string]string) {
			m[KeyQTensors] = strings.Replace(m[KeyQTensors], `"format"`, `"extra":1,"format"`, 1)
		}, "qtensors is not"},
		{"qtensor wrong scale shape", func(m map[string]string) {
			m[KeyQTensors] = strings.Replace(m[KeyQTensors], `"scale_shape":[2,1]`, `"scale_shape":[2]`, 1)
		}, "scale_shape"},
		{"qtensor wrong format", func(m map[string]string) {
			m[KeyQTensors] = strings.Replace(m[KeyQTensors], `"format":"int4"`, `"format":"int8"`, 1)
		}, "packing"},
		{"qtensor wrong code type", func(m map[string]string) {
			m[KeyQTensors] = strings.Replace(m[KeyQTensors], `"format":"int4","shape":[2,3]`, `"format":"int4","shape":[2,5]`, 1)
		}, "codes must be"},
		{"qtensor of nothing", func(m map[string]string) {
			m[KeyQTensors] = strings.Replace(m[KeyQTensors], `"a.q":`, `"b.q":`, 1)
		}, "needs the tensors"},
		{"metadata untyped array", func(m map[string]string) { m[KeyMetadata] = `{"x":[1,2]}` }, "typed"},
		{"metadata bad type", func(m map[string]string) { m[KeyMetadata] = `{"x":{"type":"u7","value":1}}` }, "unknown metadata type"},
		{"metadata overflow", func(m map[string]string) { m[KeyMetadata] = `{"x":{"type":"u8","value":256}}` }, "not a u8"},
		{"metadata duplicate", func(m map[string]string) { m[KeyMetadata] = `{"x":"a","x":"b"}` }, "twice"},
		{"metadata deep", func(m map[string]string) {
			m[KeyMetadata] = `{"x":` + strings.Repeat(`{"type":"array","elem":"array","value":[`, 20) + strings.Repeat(`]}`, 20) + `}`
		}, "nested deeper"},
	}
	for _, tc := range cases {
		var b []byte
		if tc.name == "upper-case sha" { // edited after the digest
			b = rehashThen(t, orig, func(map[string]string, []byte) {}, tc.edit)
		} else {
			b = rehash(t, orig, func(m map[string]string, _ []byte) { tc.edit(m) })
		}
		err := checkBytes(b, true, nil)
		var fe *binio.FormatError
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &fe) || fe.File != "mem.apsim" {
			t.Errorf("%s: %v, want a format error containing %q", tc.name, err, tc.want)
		}
	}
	// Metadata as another writer would produce it reads too.
	b := rehash(t, orig, func(m map[string]string, _ []byte) { m[KeyMetadata] = `{"step": 12000, "lr": 0.5, "tags": ["a"]}` })
	f, err := parseFile(bytes.NewReader(b), int64(len(b)), "x")
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := f.metadata.Get("step"); v.Type() != tensor.TypeI64 {
		t.Errorf("plain integer reads as %s", v.Type())
	}
	if v, _ := f.metadata.Get("lr"); v.Type() != tensor.TypeF64 {
		t.Errorf("plain float reads as %s", v.Type())
	}
}
