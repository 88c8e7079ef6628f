package pytorch

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-ml/sluice/internal/clitest"
	"github.com/sluice-ml/sluice/sdk/plugintest"
)

// zipSections finds the parts of a zip: each entry's data and the central
// directory.
func zipSections(b []byte) []plugintest.Section {
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil
	}
	var secs []plugintest.Section
	for _, f := range zr.File {
		off, err := f.DataOffset()
		if err != nil {
			continue
		}
		secs = append(secs, plugintest.Section{Offset: off, Name: "the local header of " + f.Name},
			plugintest.Section{Offset: off + int64(f.CompressedSize64), Name: "the data of " + f.Name})
	}
	if len(b) >= 22 {
		eocd := bytes.LastIndex(b, []byte("PK\x05\x06"))
		if eocd >= 0 && eocd+20 <= len(b) {
			dir := int64(binary.LittleEndian.Uint32(b[eocd+16:]))
			secs = append(secs, plugintest.Section{Offset: dir, Name: "the entries (start of the central directory)"},
				plugintest.Section{Offset: int64(eocd), Name: "the central directory"})
		}
	}
	return secs
}

// deflateBomb is a deflate stream of n zero bytes.
func deflateBomb(n int) []byte {
	var buf bytes.Buffer
	w, _ := flate.NewWriter(&buf, flate.BestCompression)
	w.Write(make([]byte, n))
	w.Close()
	return buf.Bytes()
}

func craftedCheckpoints(t testing.TB) []plugintest.Damage {
	six := le32(1, 2, 3, 4, 5, 6)
	ckpt := func(pkl []byte, storage []byte) []byte {
		return zipBytes(t, entry{name: "archive/data.pkl", data: pkl}, entry{name: "archive/data/0", data: storage})
	}
	dup := newPickle().op('}', '(')
	dup.str("w").tensorV2("FloatStorage", "0", 6, 0, []int64{6}, []int64{1})
	dup.str("w").tensorV2("FloatStorage", "0", 6, 0, []int64{3}, []int64{1})
	dup.op('u', '.')
	badName := newPickle().op('}')
	badName.str("w\xff").tensorV2("FloatStorage", "0", 6, 0, []int64{6}, []int64{1}).op('s', '.')
	sepName := newPickle().op('}')
	sepName.str("../w/x").tensorV2("FloatStorage", "0", 6, 0, []int64{6}, []int64{1}).op('s', '.')
	unknown := newPickle().op('}')
	unknown.str("w").tensorV2("ComplexFloatStorage", "0", 6, 0, []int64{6}, []int64{1}).op('s', '.')
	unknownV3 := newPickle().op('}')
	unknownV3.str("w").tensorV3("complex64", "0", 24, 0, []int64{3}, []int64{1}).op('s', '.')
	v3claims := newPickle().op('}')
	v3claims.str("w").tensorV3("float32", "0", 1<<31-1, 0, []int64{6}, []int64{1}).op('s', '.')

	// A storage whose directory says 6 floats but whose deflate stream
	// holds 64 MiB of zeros: reading must stop at 24 bytes.
	bombZip := zipBytes(t, entry{name: "archive/data.pkl", data: oneTensor(6, 0, []int64{6}, []int64{1})},
		entry{name: "archive/data/0", data: make([]byte, 64<<20), method: zip.Deflate})
	// Patch the sizes of archive/data/0 (in its local header and the
	// central directory) to say 24 bytes.
	bombZip = patchZipSize(t, bombZip, "archive/data/0", 24)

	return []plugintest.Damage{
		{Name: "storage numel claims 2^31", Data: ckpt(oneTensor(1<<31-1, 0, []int64{6}, []int64{1}), six), MaxAlloc: 16 << 20},
		{Name: "untyped storage claims 2^31 bytes", Data: ckpt(v3claims.Bytes(), six), MaxAlloc: 16 << 20},
		{Name: "shape claims 2^31 elements", Data: ckpt(oneTensor(6, 0, []int64{1<<31 - 1}, []int64{1}), six), MaxAlloc: 16 << 20},
		{Name: "dims whose product overflows", Data: ckpt(oneTensor(6, 0, []int64{1<<31 - 1, 1<<31 - 1, 1<<31 - 1}, []int64{1, 1, 1}), six)},
		{Name: "dimension -1", Data: ckpt(oneTensor(6, 0, []int64{-1}, []int64{1}), six)},
		{Name: "stride -1", Data: ckpt(oneTensor(6, 0, []int64{6}, []int64{-1}), six)},
		{Name: "offset out of bounds", Data: ckpt(oneTensor(6, 5, []int64{6}, []int64{1}), six)},
		{Name: "offset -1", Data: ckpt(oneTensor(6, -1, []int64{6}, []int64{1}), six)},
		{Name: "stride past the storage", Data: ckpt(oneTensor(6, 0, []int64{2, 3}, []int64{3, 2}), six)},
		{Name: "duplicate tensor name", Data: ckpt(dup.Bytes(), six)},
		{Name: "tensor name of invalid UTF-8", Data: ckpt(badName.Bytes(), six)},
		// State-dict keys are names, never paths: no reader or writer of
		// Sluice turns one into a file path.
		{Name: "tensor name with path separators (legal)", Data: ckpt(sepName.Bytes(), six), MayRead: true},
		{Name: "unknown storage type", Data: ckpt(unknown.Bytes(), six)},
		{Name: "unknown dtype", Data: ckpt(unknownV3.Bytes(), le32(1, 2, 3, 4, 5, 6))},
		{Name: "storage shorter than the pickle says", Data: ckpt(oneTensor(6, 0, []int64{6}, []int64{1}), le32(1, 2))},
		{Name: "deflate bomb: 64 MiB of zeros where the directory says 24 bytes", Data: bombZip, MaxAlloc: 32 << 20},
		{Name: "not a zip, not a legacy pickle", Data: []byte("PK\x03\x04 but no zip")},
	}
}

func sourceSuite(t testing.TB) plugintest.SourceSuite {
	var fixtures []string
	for _, f := range []string{"dtypes.bin", "views.bin", "tied.bin", "params.pth", "lightning.ckpt", "nested_model.pt"} {
		fixtures = append(fixtures, filepath.Join("testdata", f))
	}
	var compare []string
	for _, f := range []string{"dtypes.bin", "views.bin", "tied.bin", "params.pth", "hf_sharded"} {
		compare = append(compare, filepath.Join("testdata", f))
	}
	return plugintest.SourceSuite{
		Plugin: Plugin(), Source: "pytorch", Fixtures: fixtures, Sections: zipSections,
		Crafted: craftedCheckpoints(t), NameFileInErrors: true,
		Large: func(dir string) (string, error) {
			p := filepath.Join(dir, "large.bin")
			n := int64(64<<20) / 4
			b := zipBytes(t, entry{name: "archive/data.pkl", data: oneTensor(n, 0, []int64{n}, []int64{1})},
				entry{name: "archive/data/0", data: make([]byte, 64<<20)})
			return p, os.WriteFile(p, b, 0o644)
		},
		Compare:  compare,
		MinProbe: 60,
		Refused: []plugintest.Refusal{{
			Name: "malicious",
			Path: func(t *testing.T, dir string) string {
				return filepath.Join("testdata", "malicious", "state_dict_os_system.bin")
			},
			Contains: "posix.system",
		}},
	}
}

// TestCorruptFiles runs the corruption suite of sourceSuite's first fixture
// through the CLI (TestConformance runs all of them in-process).
func TestCorruptFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the CLI runs are skipped")
	}
	bin := clitest.Build(t)
	for _, cs := range sourceSuite(t).CorruptSuites(t)[:1] {
		clitest.CorruptCLI(t, bin, cs, clitest.CorruptOptions{ConvertTo: "out.safetensors"})
	}
}
