package binio

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"unsafe"
)

// within reports whether b lies inside the memory of whole.
func within(b, whole []byte) bool {
	start := uintptr(unsafe.Pointer(unsafe.SliceData(whole)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return p >= start && p+uintptr(len(b)) <= start+uintptr(len(whole))
}

func TestViewMapsLargeRegionsOfAFile(t *testing.T) {
	data := make([]byte, 3*MinMappedView+100)
	for i := range data {
		data[i] = byte(i * 7)
	}
	path := filepath.Join(t.TempDir(), "f.bin")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := NewReader(f, int64(len(data)), path)

	small, err := r.View(100, "small")
	if err != nil || !bytes.Equal(small, data[:100]) {
		t.Fatalf("small view = %v, %v", small[:min(len(small), 8)], err)
	}
	if r.mapped != nil {
		t.Error("a view under MinMappedView mapped the file")
	}
	big, err := r.View(MinMappedView, "big")
	if err != nil || !bytes.Equal(big, data[100:100+MinMappedView]) {
		t.Fatalf("big view differs from the file: %v", err)
	}
	if r.Offset() != 100+MinMappedView {
		t.Errorf("offset %d after two views, want %d", r.Offset(), 100+MinMappedView)
	}
	if canMap && (r.mapped == nil || !within(big, r.mapped)) {
		t.Error("a view of MinMappedView bytes is not a slice of the mapping")
	}
	if cap(big) != len(big) {
		t.Errorf("the view's capacity %d reaches past its %d bytes", cap(big), len(big))
	}
	if _, err := r.View(uint64(r.Remaining())+1, "past"); err == nil {
		t.Error("a view past the end of the file was given")
	}
	rest, err := r.View(uint64(r.Remaining()), "rest")
	if err != nil || !bytes.Equal(rest, data[100+MinMappedView:]) {
		t.Fatalf("view of the rest differs from the file: %v", err)
	}
}

func TestViewCopiesWithoutAFile(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), MinMappedView/8)
	r := NewReader(bytes.NewReader(data), int64(len(data)), "mem")
	v, err := r.View(uint64(len(data)), "all")
	if err != nil || !bytes.Equal(v, data) {
		t.Fatalf("view differs: %v", err)
	}
	if within(v, data) {
		t.Error("the view of a plain io.ReaderAt shares the caller's memory")
	}
}

// TestViewMapsOnlyTheStartOfTheFile: a view maps the file to twice its end
// (at least minMapping), not the whole file, and a later view past that
// maps further while the earlier view stays readable.
func TestViewMapsOnlyTheStartOfTheFile(t *testing.T) {
	if !canMap {
		t.Skip("no mapping here: View copies")
	}
	data := make([]byte, 3*minMapping)
	for i := range data {
		data[i] = byte(i * 13)
	}
	path := filepath.Join(t.TempDir(), "big.bin")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := NewReader(f, int64(len(data)), path)
	first, err := r.View(MinMappedView, "first")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.mapped) != minMapping || !within(first, r.mapped) {
		t.Fatalf("after a view at the start, %d bytes mapped, want %d holding the view", len(r.mapped), minMapping)
	}
	if err := r.SeekTo(minMapping); err != nil {
		t.Fatal(err)
	}
	second, err := r.View(MinMappedView, "second")
	if err != nil {
		t.Fatal(err)
	}
	if want := 2 * (minMapping + MinMappedView); len(r.mapped) != want || !within(second, r.mapped) {
		t.Fatalf("after a view past the first mapping, %d bytes mapped, want %d holding the view", len(r.mapped), want)
	}
	if !bytes.Equal(first, data[:MinMappedView]) || !bytes.Equal(second, data[minMapping:minMapping+MinMappedView]) {
		t.Error("a view differs from the file")
	}
}
