package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyTree copies the files of dir (not subdirectories) into a new
// temporary directory and returns it.
func copyTree(t *testing.T, dir string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// flipByte inverts one byte of a file at offset off (from the end when
// negative).
func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if off < 0 {
		off += int64(len(b))
	}
	b[off] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyEveryFormat(t *testing.T) {
	f := fixtures(t)
	root := repoRoot(t)
	for _, tc := range []struct {
		name   string
		args   []string
		format string
		files  int
		checks map[string]int // check → how many with status ok
	}{
		{"hugging face directory", []string{f.HF}, "safetensors", 3, map[string]int{"structure": 2, "set": 1}},
		{"safetensors file", []string{f.ST}, "safetensors", 1, map[string]int{"structure": 1}},
		{"gguf", []string{f.GGUF}, "gguf", 1, map[string]int{"structure": 1}},
		{"gguf split set from shard 3", []string{filepath.Join(filepath.Dir(f.GGUFSplit), "model-00003-of-00003.gguf")}, "gguf", 3, map[string]int{"structure": 3, "set": 1}},
		{"apsim, signature not checked", []string{f.Apsim}, "apsim", 1, map[string]int{"sha256": 1}},
		{"apsim with its key", []string{f.Apsim, "--key", testSecret}, "apsim", 1, map[string]int{"sha256": 1, "signature": 1}},
		{"apsim set with its key", []string{f.ApsimSetName, "--key", testSecret}, "apsim", 4, map[string]int{"sha256": 3, "set": 1, "signature": 1}},
		{"apsim QTensors", []string{f.ApsimQ}, "apsim", 1, map[string]int{"sha256": 1}},
		{"apr", []string{f.APR}, "apr", 1, map[string]int{"checksum": 1}},
		{"onnx", []string{filepath.Join(root, "plugins", "onnx", "testdata", "model.onnx")}, "onnx", 1, map[string]int{"structure": 1}},
		{"pytorch", []string{filepath.Join(root, "plugins", "pytorch", "testdata", "params.pth")}, "pytorch", 1, map[string]int{"structure": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _ := sluiceCode(t, exitOK, append([]string{"verify", "--json"}, tc.args...)...)
			var r verifyReport
			decodeJSON(t, out, &r)
			if !r.OK || r.Format != tc.format || len(r.Files) != tc.files || r.Schema != verifySchema {
				t.Errorf("ok %v, format %s, %d files; want ok, %s, %d:\n%s", r.OK, r.Format, len(r.Files), tc.format, tc.files, out)
			}
			got := map[string]int{}
			for _, c := range r.Checks {
				if c.Status == statusOK {
					got[c.Check]++
				}
				if c.Status == statusFailed {
					t.Errorf("check failed: %+v", c)
				}
			}
			for check, n := range tc.checks {
				if got[check] != n {
					t.Errorf("%d %q checks passed, want %d:\n%s", got[check], check, n, out)
				}
			}
			text, _ := sluiceCode(t, exitOK, append([]string{"verify"}, tc.args...)...)
			if !strings.Contains(text, "verified: ") {
				t.Errorf("text output does not end with the verdict:\n%s", text)
			}
		})
	}
}

func TestVerifyApsimSignatureStatesAreReported(t *testing.T) {
	f := fixtures(t)
	out, _ := sluiceCode(t, exitOK, "verify", f.ApsimSet)
	if !strings.Contains(out, "SKIPPED") || !strings.Contains(out, "give --key") {
		t.Errorf("an unchecked signature should be reported as skipped:\n%s", out)
	}
	out, _ = sluiceCode(t, exitBadInput, "verify", f.ApsimSet, "--key", "another secret")
	if !strings.Contains(out, "FAILED") || !strings.Contains(out, "signature does not match") || !strings.Contains(out, "model.apsim.index.json") {
		t.Errorf("a wrong key should fail the signature check, naming the index:\n%s", out)
	}
	js, _ := sluiceCode(t, exitBadInput, "verify", f.ApsimSet, "--key", "another secret", "--json")
	var r verifyReport
	decodeJSON(t, js, &r)
	if r.OK || len(r.Files) != 4 || len(r.Checks) != 2 || r.Checks[0].Status != statusOK || r.Checks[1].Check != "signature" || r.Checks[1].Status != statusFailed {
		t.Errorf("a wrong key: the digests hold, the signature fails, every file is listed:\n%s", js)
	}
	out, _ = sluiceCode(t, exitBadInput, "verify", f.ApsimQ, "--key", testSecret)
	if !strings.Contains(out, "not signed") {
		t.Errorf("a key given for an unsigned checkpoint should fail:\n%s", out)
	}
	keyFile := filepath.Join(t.TempDir(), "key")
	os.WriteFile(keyFile, []byte(testSecret+"\n"), 0o600)
	sluiceCode(t, exitOK, "verify", f.ApsimSet, "--key-file", keyFile)
	_, stderr := sluiceCode(t, exitBadConfig, "verify", f.ApsimSet, "--key-file", keyFile, "--key", "x")
	if !strings.Contains(stderr, "give one of --key, --key-file and --user-key") {
		t.Errorf("two keys: %s", stderr)
	}
}

func TestVerifyFindsDamage(t *testing.T) {
	f := fixtures(t)
	t.Run("apsim shard", func(t *testing.T) {
		dir := copyTree(t, filepath.Dir(f.ApsimSet))
		flipByte(t, filepath.Join(dir, "model-00002-of-00003.apsim"), -10)
		out, _ := sluiceCode(t, exitBadInput, "verify", filepath.Join(dir, "model.apsim"), "--key", testSecret)
		for _, want := range []string{"FAILED", "model-00002-of-00003.apsim", "SHA-256 mismatch"} {
			if !strings.Contains(out, want) {
				t.Errorf("report lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("apsim shard missing", func(t *testing.T) {
		dir := copyTree(t, filepath.Dir(f.ApsimSet))
		os.Remove(filepath.Join(dir, "model-00003-of-00003.apsim"))
		out, _ := sluiceCode(t, exitBadInput, "verify", filepath.Join(dir, "model.apsim.index.json"))
		if !strings.Contains(out, "model-00003-of-00003.apsim") {
			t.Errorf("report does not name the missing shard:\n%s", out)
		}
	})
	t.Run("gguf truncated", func(t *testing.T) {
		dir := copyTree(t, filepath.Dir(f.GGUF))
		p := filepath.Join(dir, "model.gguf")
		b, _ := os.ReadFile(p)
		os.WriteFile(p, b[:len(b)-100], 0o644)
		out, _ := sluiceCode(t, exitBadInput, "verify", p)
		if !strings.Contains(out, "model.gguf") || !strings.Contains(out, "structure") {
			t.Errorf("report does not name the file:\n%s", out)
		}
	})
	t.Run("gguf split shard missing", func(t *testing.T) {
		dir := copyTree(t, filepath.Dir(f.GGUFSplit))
		os.Remove(filepath.Join(dir, "model-00002-of-00003.gguf"))
		out, _ := sluiceCode(t, exitBadInput, "verify", filepath.Join(dir, "model-00001-of-00003.gguf"))
		if !strings.Contains(out, "model-00002-of-00003.gguf") {
			t.Errorf("report does not name the missing shard:\n%s", out)
		}
	})
	t.Run("apr byte flipped", func(t *testing.T) {
		dir := copyTree(t, filepath.Dir(f.APR))
		p := filepath.Join(dir, "model.apr")
		flipByte(t, p, -100)
		out, _ := sluiceCode(t, exitBadInput, "verify", p)
		if !strings.Contains(out, "checksum") || !strings.Contains(out, "model.apr") {
			t.Errorf("report lacks the checksum failure:\n%s", out)
		}
	})
	t.Run("safetensors overlap", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "overlap.safetensors")
		writeRawSafetensors(t, p, `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, 12)
		out, _ := sluiceCode(t, exitBadInput, "verify", p)
		if !strings.Contains(out, "overlaps") || !strings.Contains(out, "overlap.safetensors") {
			t.Errorf("report lacks the overlap:\n%s", out)
		}
	})
	t.Run("safetensors out of bounds", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "short.safetensors")
		writeRawSafetensors(t, p, `{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, 8)
		out, _ := sluiceCode(t, exitBadInput, "verify", p)
		if !strings.Contains(out, "past the end") {
			t.Errorf("report lacks the bounds failure:\n%s", out)
		}
	})
	t.Run("safetensors unaligned", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "unaligned.safetensors")
		writeRawSafetensors(t, p, `{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"F32","shape":[1],"data_offsets":[1,5]}}`, 5)
		out, _ := sluiceCode(t, exitOK, "verify", p)
		if !strings.Contains(out, "WARNING") || !strings.Contains(out, `not aligned to their element size`) {
			t.Errorf("an unaligned tensor should be a warning:\n%s", out)
		}
		out, _ = sluiceCode(t, exitBadInput, "verify", p, "--strict")
		if !strings.Contains(out, "FAILED") {
			t.Errorf("--strict should fail on the warning:\n%s", out)
		}
	})
}

// writeRawSafetensors writes a safetensors file with the given JSON header
// (padded with spaces to a multiple of 8) and data bytes of value 1.
func writeRawSafetensors(t *testing.T, path, header string, data int) {
	t.Helper()
	for len(header)%8 != 0 {
		header += " "
	}
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, uint64(len(header)))
	b.WriteString(header)
	b.Write(bytes.Repeat([]byte{1}, data))
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyDetachedSignatures(t *testing.T) {
	f := fixtures(t)
	dir := t.TempDir()
	g := filepath.Join(dir, "signed.gguf")
	sluiceCode(t, exitOK, "convert", f.ST, g, "--dtype", "q8_0", "--key", testSecret, "--in-process", "-q")
	if _, err := os.Stat(g + ".sig"); err != nil {
		t.Fatalf("convert --key to GGUF wrote no detached signature: %v", err)
	}
	out, _ := sluiceCode(t, exitOK, "verify", g)
	if !strings.Contains(out, "SKIPPED") || !strings.Contains(out, "signed.gguf.sig is present") {
		t.Errorf("without a key the signature should be reported, not checked:\n%s", out)
	}
	out, _ = sluiceCode(t, exitOK, "verify", g, "--key", testSecret)
	if !strings.Contains(out, "detached-signature") || !strings.Contains(out, "matches") {
		t.Errorf("the detached signature was not checked:\n%s", out)
	}
	out, _ = sluiceCode(t, exitBadInput, "verify", g, "--key", "not the key")
	if !strings.Contains(out, "HMAC does not match") {
		t.Errorf("a wrong key should fail:\n%s", out)
	}
	sluiceCode(t, exitBadInput, "verify", f.GGUF, "--key", testSecret) // unsigned: a key demands a signature

	// A safetensors set: every shard and the index carry a signature.
	set := filepath.Join(dir, "set", "model.safetensors")
	sluiceCode(t, exitOK, "convert", f.HF, set, "--shard", "100KB", "--key", testSecret, "--in-process", "-q")
	out, _ = sluiceCode(t, exitOK, "verify", set, "--key", testSecret, "--json")
	var r verifyReport
	decodeJSON(t, out, &r)
	signed := 0
	for _, c := range r.Checks {
		if c.Check == "detached-signature" && c.Status == statusOK {
			signed++
		}
	}
	if signed < len(r.Files) || len(r.Files) < 3 {
		t.Errorf("%d detached signatures checked for %d files:\n%s", signed, len(r.Files), out)
	}

	// Changing a signed file after signing fails, naming it.
	flipByte(t, g, -5)
	out, _ = sluiceCode(t, exitBadInput, "verify", g, "--key", testSecret)
	if !strings.Contains(out, "changed after signing") || !strings.Contains(out, "signed.gguf") {
		t.Errorf("a modified file should fail its signature:\n%s", out)
	}
}

func TestVerifyAPRSet(t *testing.T) {
	f := fixtures(t)
	out := filepath.Join(t.TempDir(), "m.apr")
	sluiceCode(t, exitOK, "convert", f.HF, out, "--shard", "100KB", "--in-process", "-q")
	shards := glob(t, filepath.Join(filepath.Dir(out), "m-*-of-*.apr"))
	if len(shards) < 2 {
		t.Fatalf("%d shards", len(shards))
	}
	var r verifyReport
	js, _ := sluiceCode(t, exitOK, "verify", shards[len(shards)-1], "--json")
	decodeJSON(t, js, &r)
	if len(r.Files) != len(shards) {
		t.Errorf("verify of one shard checked %d files of %d", len(r.Files), len(shards))
	}
	flipByte(t, shards[0], -100)
	text, _ := sluiceCode(t, exitBadInput, "verify", shards[len(shards)-1])
	if !strings.Contains(text, filepath.Base(shards[0])) {
		t.Errorf("the damaged shard is not named:\n%s", text)
	}
}

func TestVerifyJSONGolden(t *testing.T) {
	f := fixtures(t)
	out, _ := sluiceCode(t, exitOK, "verify", f.ApsimSetName, "--key", testSecret, "--json")
	golden(t, "verify-apsim-set.json", out, f.dir, "$FIXTURES")
	out, _ = sluiceCode(t, exitOK, "verify", f.HF, "--json")
	golden(t, "verify-hf-dir.json", out, f.dir, "$FIXTURES")
}
