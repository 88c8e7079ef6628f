package main

import (
	"bufio"
	"bytes"
	"io"
	"unicode/utf8"
)

// columnPadding is the number of spaces after a column's widest cell, as
// in the tabwriter of newTable.
const columnPadding = 2

// blanks are the spaces padding is copied from.
var blanks = bytes.Repeat([]byte{' '}, 64)

// columns writes lines of cells aligned to widths measured beforehand, for
// a table too long to hold: Measure every line, then write each with Line.
// It aligns as table (text/tabwriter) aligns a table whose lines all have
// the same number of cells, and holds nothing but the widths and a line.
type columns struct {
	out    *bufio.Writer
	indent string // written before each line's first cell, counted in its width
	widths []int  // of every cell but the last, padding included
	line   []byte
}

func newColumns(w io.Writer, indent string) *columns {
	return &columns{out: bufio.NewWriterSize(w, 64<<10), indent: indent}
}

// Measure widens the columns to fit cells.
func (c *columns) Measure(cells ...string) {
	for i, cell := range cells[:len(cells)-1] {
		n := utf8.RuneCountInString(cell) + columnPadding
		if i == 0 {
			n += utf8.RuneCountInString(c.indent)
		}
		if i == len(c.widths) {
			c.widths = append(c.widths, 0)
		}
		c.widths[i] = max(c.widths[i], n)
	}
}

// Line writes a line of cells, padded to the measured widths.
func (c *columns) Line(cells ...string) {
	c.line = append(c.line[:0], c.indent...)
	start := 0
	for i, cell := range cells {
		c.line = append(c.line, cell...)
		if i == len(cells)-1 {
			break
		}
		pad := c.widths[i] - utf8.RuneCount(c.line[start:])
		for ; pad > 0; pad -= min(pad, len(blanks)) {
			c.line = append(c.line, blanks[:min(pad, len(blanks))]...)
		}
		start = len(c.line)
	}
	c.line = append(bytes.TrimRight(c.line, " "), '\n')
	c.out.Write(c.line)
}

// Flush writes what Line buffered.
func (c *columns) Flush() error { return c.out.Flush() }
