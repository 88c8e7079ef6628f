package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestColumnsAlignAsTable holds columns, which streams, to the output of
// newTable (text/tabwriter) for the same lines: widths in runes, padding,
// the indent counted in the first column, trailing spaces dropped.
func TestColumnsAlignAsTable(t *testing.T) {
	pieces := []string{"", " ", "a", "bf16", "[64, 128]", "16.4 kB", "ünïcode", "日本語", "trailing  ", "model.layers.0.mlp.experts.17.down_proj.weight"}
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		cellsPerLine := 2 + rng.IntN(4)
		lines := make([][]string, 1+rng.IntN(30))
		for i := range lines {
			lines[i] = make([]string, cellsPerLine)
			for j := range lines[i] {
				lines[i][j] = pieces[rng.IntN(len(pieces))]
			}
		}
		var want, got bytes.Buffer
		tw := newTable(&want)
		for _, l := range lines {
			fmt.Fprintf(tw, "  %s\n", strings.Join(l, "\t"))
		}
		tw.Flush()
		cols := newColumns(&got, "  ")
		for _, l := range lines {
			cols.Measure(l...)
		}
		for _, l := range lines {
			cols.Line(l...)
		}
		if err := cols.Flush(); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Fatalf("trial %d, lines %q:\ncolumns:\n%s\ntabwriter:\n%s", trial, lines, got.String(), want.String())
		}
	}
}
