package binio

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
)

func TestReaderChecksLengthsBeforeAllocating(t *testing.T) {
	data := []byte{1, 0, 2, 0, 0, 0, 'h', 'i', 0xff}
	r := NewReader(bytes.NewReader(data), int64(len(data)), "f.bin")
	if v, err := r.U16("a"); err != nil || v != 1 {
		t.Fatalf("U16 = %d, %v", v, err)
	}
	if v, err := r.U32("b"); err != nil || v != 2 {
		t.Fatalf("U32 = %d, %v", v, err)
	}
	if s, err := r.String(2, "s"); err != nil || s != "hi" {
		t.Fatalf("String = %q, %v", s, err)
	}
	if _, err := r.U64("c"); err == nil {
		t.Fatal("read past the end")
	} else {
		var fe *FormatError
		if !errors.As(err, &fe) || fe.Offset != 8 || !strings.Contains(err.Error(), "f.bin") {
			t.Errorf("error %v lacks the file or the offset 8", err)
		}
	}
	for _, n := range []uint64{1 << 31, 1 << 60, math.MaxUint64} {
		if _, err := r.Bytes(n, "huge"); err == nil || !errors.Is(err, ErrFormat) {
			t.Errorf("Bytes(%d) = %v, want a format error", n, err)
		}
		if err := r.CheckLength(n, 8, "array"); err == nil {
			t.Errorf("CheckLength(%d × 8) accepted", n)
		}
	}
	r.MaxAlloc = 1
	r.SeekTo(0)
	if _, err := r.Bytes(2, "capped"); err == nil || !strings.Contains(err.Error(), "over the limit") {
		t.Errorf("cap not enforced: %v", err)
	}
	if err := r.SeekTo(100); err == nil {
		t.Error("seek past the end accepted")
	}
}

func TestLargeReadsBypassTheBuffer(t *testing.T) {
	data := bytes.Repeat([]byte("abcdefgh"), 20000)
	r := NewReader(bytes.NewReader(data), int64(len(data)), "")
	r.Skip(3, "x")
	b, err := r.Bytes(uint64(len(data)-3), "rest")
	if err != nil || !bytes.Equal(b, data[3:]) {
		t.Fatalf("large read: %v", err)
	}
}

func TestArithmetic(t *testing.T) {
	if _, ok := AddOffsets(math.MaxInt64, 1); ok {
		t.Error("overflow past MaxInt64 accepted")
	}
	if v, ok := AlignUp(33, 32); !ok || v != 64 {
		t.Errorf("AlignUp(33, 32) = %d", v)
	}
	if _, ok := AlignUp(1, 24); ok {
		t.Error("non power of two alignment accepted")
	}
	if _, ok := AlignUp(math.MaxUint64-3, 32); ok {
		t.Error("overflowing alignment accepted")
	}
}
