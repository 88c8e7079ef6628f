package layout

import (
	"bytes"
	"testing"
)

// reference is the converter's definition, written independently: view the
// rows as [heads, 2, hd/2] and swap the last two axes.
func reference(src []byte, heads, rowBytes int) []byte {
	rows := len(src) / rowBytes
	hd := rows / heads
	out := make([]byte, 0, len(src))
	for h := 0; h < heads; h++ {
		for b := 0; b < hd/2; b++ {
			for a := 0; a < 2; a++ {
				r := h*hd + a*(hd/2) + b
				out = append(out, src[r*rowBytes:(r+1)*rowBytes]...)
			}
		}
	}
	return out
}

func rowsOf(rows, rowBytes int) []byte {
	b := make([]byte, rows*rowBytes)
	for i := range b {
		b[i] = byte(i*7 + i/rowBytes)
	}
	return b
}

func TestPermuteMatchesReference(t *testing.T) {
	for _, c := range []struct{ heads, hd, rowBytes int }{{1, 2, 1}, {4, 8, 3}, {2, 16, 34}, {8, 4, 2}} {
		src := rowsOf(c.heads*c.hd, c.rowBytes)
		got := make([]byte, len(src))
		if err := PermuteQK(got, src, c.heads, c.rowBytes); err != nil {
			t.Fatal(err)
		}
		if want := reference(src, c.heads, c.rowBytes); !bytes.Equal(got, want) {
			t.Errorf("%+v: PermuteQK differs from the reference", c)
		}
		back := make([]byte, len(src))
		if err := UnpermuteQK(back, got, c.heads, c.rowBytes); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(back, src) {
			t.Errorf("%+v: UnpermuteQK does not undo PermuteQK", c)
		}
		// Streaming in odd-sized pieces gives the same bytes.
		for _, inverse := range []bool{false, true} {
			var out bytes.Buffer
			w, err := NewQKWriter(&out, c.heads*c.hd, c.heads, c.rowBytes, inverse)
			if err != nil {
				t.Fatal(err)
			}
			in := src
			if inverse {
				in = got
			}
			for p := in; len(p) > 0; {
				n := min(len(p), 5)
				if _, err := w.Write(p[:n]); err != nil {
					t.Fatal(err)
				}
				p = p[n:]
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			want := got
			if inverse {
				want = src
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Errorf("%+v inverse=%v: QKWriter differs", c, inverse)
			}
		}
	}
}

func TestPermuteRejects(t *testing.T) {
	src := rowsOf(6, 2)
	dst := make([]byte, len(src))
	if err := PermuteQK(dst, src, 4, 2); err == nil {
		t.Error("6 rows in 4 heads accepted")
	}
	if err := PermuteQK(dst, src, 2, 2); err == nil {
		t.Error("odd head size 3 accepted")
	}
	if err := PermuteQK(dst[:3], src, 3, 2); err == nil {
		t.Error("short dst accepted")
	}
	w, _ := NewQKWriter(&bytes.Buffer{}, 4, 2, 2, false)
	if _, err := w.Write(make([]byte, 9)); err == nil {
		t.Error("QKWriter accepted too many bytes")
	}
	w.Write(make([]byte, 3))
	if err := w.Close(); err == nil {
		t.Error("QKWriter.Close accepted a short tensor")
	}
}
