package apr

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"hash/crc64"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// goldenVector rebuilds the 516-byte current-writer golden of aprender
// (crates/apr-format/tests/fixtures/golden_v2_current.apr) from its
// description in spec/apr.md §11: the header hex as given, the JSON as
// given, the two index entries, the data, and the footer CRC the spec
// states.
func goldenVector(t *testing.T) []byte {
	t.Helper()
	headerHex := "41505200020000040200000040000000" +
		"00000000bd0000000001000000000000" +
		"8001000000000000028cc03b00000000" +
		"00000000000000000000000000000000"
	header, err := hex.DecodeString(headerHex)
	if err != nil || len(header) != 64 {
		t.Fatalf("bad header hex: %v", err)
	}
	json := `{"model_type":"linear_regression","name":"golden-v2","license":null,"data_source":null,"data_license":null,"version":"0.0.0-golden","created_at":"1700000000","total_size":0,"param_count":8}`
	if len(json) != 189 {
		t.Fatalf("the spec's JSON is %d bytes, it says 189", len(json))
	}
	out := make([]byte, 516)
	copy(out, header)
	copy(out[64:], json)
	idx := out[256:256]
	idx = binary.LittleEndian.AppendUint16(idx, 4)
	idx = append(idx, "bias"...)
	idx = append(idx, 0, 1)
	idx = binary.LittleEndian.AppendUint64(idx, 1)
	idx = binary.LittleEndian.AppendUint64(idx, 0)
	idx = binary.LittleEndian.AppendUint64(idx, 4)
	idx = binary.LittleEndian.AppendUint16(idx, 7)
	idx = append(idx, "weights"...)
	idx = append(idx, 0, 1)
	idx = binary.LittleEndian.AppendUint64(idx, 8)
	idx = binary.LittleEndian.AppendUint64(idx, 64)
	idx = binary.LittleEndian.AppendUint64(idx, 32)
	if len(idx) != 67 {
		t.Fatalf("index is %d bytes, want 32 + 35", len(idx))
	}
	copy(out[384:], []byte{0x00, 0x00, 0x00, 0x3e})
	copy(out[448:], f32Bytes(1, 2, 0.5, -0.5, 4, -2, 0.25, 8))
	binary.LittleEndian.PutUint32(out[512:], 0x550F3F35)

	// The spec's two CRCs, checked against the bytes they protect.
	if got := headerCRC(out[:64]); got != 0x3BC08C02 {
		t.Fatalf("header CRC of the rebuilt vector is %08x, the spec says 3bc08c02", got)
	}
	if got := crc32.ChecksumIEEE(out[:512]); got != 0x550F3F35 {
		t.Fatalf("footer CRC of the rebuilt vector is %08x, the spec says 550f3f35", got)
	}
	return out
}

func TestGoldenVectorAprender(t *testing.T) {
	want := goldenVector(t)
	got := writeBytes(t, WriteOptions{Layout: LayoutAprender, Compression: CompressionNone}, goldenModel())
	if !bytes.Equal(got, want) {
		t.Fatalf("writer output differs from aprender's 516-byte golden:\n%s", diffHex(got, want))
	}
	checkGoldenFile(t, "golden_aprender.apr", got)
}

func TestGoldenSpecLayout(t *testing.T) {
	got := writeBytes(t, WriteOptions{Layout: LayoutSpec, Compression: CompressionNone}, goldenModel())
	// The structure, asserted independently of the golden file.
	if string(got[:4]) != "APR\x02" || binary.LittleEndian.Uint16(got[4:]) != 2 {
		t.Fatalf("magic/version: % x", got[:6])
	}
	if flags := binary.LittleEndian.Uint32(got[6:]); flags != 0 {
		t.Errorf("flags = %x, want 0", flags)
	}
	if off, size := binary.LittleEndian.Uint64(got[10:]), binary.LittleEndian.Uint64(got[18:]); off != 32 || size != 189 {
		t.Errorf("metadata at %d size %d, want 32 and 189", off, size)
	}
	if !bytes.Equal(got[26:32], make([]byte, 6)) {
		t.Errorf("reserved bytes % x", got[26:32])
	}
	if !strings.HasPrefix(string(got[32:]), `{"model_type":"linear_regression"`) {
		t.Errorf("metadata does not follow the header")
	}
	// Index at align64(32+189) = 256, 67 bytes of entries, a zero name
	// length, data at 384.
	if got[256] != 4 || string(got[258:262]) != "bias" || binary.LittleEndian.Uint16(got[256+67:]) != 0 {
		t.Errorf("index layout wrong: % x", got[256:256+70])
	}
	if !bytes.Equal(got[384:388], f32Bytes(0.125)) || !bytes.Equal(got[448:480], f32Bytes(1, 2, 0.5, -0.5, 4, -2, 0.25, 8)) {
		t.Errorf("data not at 384 and 448")
	}
	if len(got) != 512+16 {
		t.Fatalf("size %d, want 528", len(got))
	}
	footer := got[512:]
	if sum := binary.LittleEndian.Uint64(footer); sum != crc64Sum(got[:512]) {
		t.Errorf("footer checksum %x, want CRC-64/XZ %x", sum, crc64Sum(got[:512]))
	}
	if total := binary.LittleEndian.Uint64(footer[8:]); total != 528 {
		t.Errorf("footer total size %d, want 528", total)
	}
	checkGoldenFile(t, "golden_spec.apr", got)
}

// TestCRC64IsXZ pins the 64-bit checksum to CRC-64/XZ by its check value.
func TestCRC64IsXZ(t *testing.T) {
	if got := crc64Sum([]byte("123456789")); got != 0x995DC9BBDF1939FA {
		t.Fatalf("CRC-64 of 123456789 = %016x, CRC-64/XZ is 995dc9bbdf1939fa", got)
	}
	if got := crc32.ChecksumIEEE([]byte("123456789")); got != 0xCBF43926 {
		t.Fatalf("CRC32 check value %08x", got)
	}
}

// checkGoldenFile compares with testdata/name, rewritten with -update.
func checkGoldenFile(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("output differs from %s:\n%s", path, diffHex(got, want))
	}
}

func diffHex(got, want []byte) string {
	var sb strings.Builder
	if len(got) != len(want) {
		sb.WriteString("sizes differ: got " + itoa(len(got)) + ", want " + itoa(len(want)) + "\n")
	}
	shown := 0
	for off := 0; off < max(len(got), len(want)) && shown < 8; off += 16 {
		g := got[min(off, len(got)):min(off+16, len(got))]
		w := want[min(off, len(want)):min(off+16, len(want))]
		if !bytes.Equal(g, w) {
			sb.WriteString(itoa(off) + ": got  " + hex.EncodeToString(g) + "\n")
			sb.WriteString(itoa(off) + ": want " + hex.EncodeToString(w) + "\n")
			shown++
		}
	}
	return sb.String()
}

func itoa(n int) string { return strconv.Itoa(n) }

func crc64Sum(b []byte) uint64 { return crc64.Checksum(b, crc64Table) }
