// Package linediff compares texts line by line, for the diffs fmt prints and
// the golden-file tests show.
package linediff

import (
	"fmt"
	"io"
	"strings"
)

// Unified writes a unified diff of two texts, with 3 lines of context, under
// the file names old/name and new/name.
func Unified(w io.Writer, name string, a, b []byte) {
	la, lb := Split(a), Split(b)
	ops := Lines(la, lb)
	fmt.Fprintf(w, "--- old/%s\n+++ new/%s\n", name, name)
	const context = 3
	// Group the edit script into hunks.
	for i := 0; i < len(ops); {
		if ops[i].Kind == ' ' {
			i++
			continue
		}
		start := max(i-context, 0)
		end := i
		for end < len(ops) {
			if ops[end].Kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].Kind == ' ' {
				run++
			}
			if run-end > 2*context || run == len(ops) {
				end = min(end+context, len(ops))
				break
			}
			end = run
		}
		oa, ob := ops[start].A, ops[start].B
		na, nb := 0, 0
		for _, op := range ops[start:end] {
			if op.Kind != '+' {
				na++
			}
			if op.Kind != '-' {
				nb++
			}
		}
		fmt.Fprintf(w, "@@ -%d,%d +%d,%d @@\n", oa+1, na, ob+1, nb)
		for _, op := range ops[start:end] {
			fmt.Fprintf(w, "%c%s\n", op.Kind, op.Text)
		}
		i = end
	}
}

// Split cuts a text into its lines, without their newlines; a last line
// without a newline counts, an empty text has none.
func Split(b []byte) []string {
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// Op is one step of an edit script: a line kept, removed or added.
type Op struct {
	Kind byte   // ' ' kept, '-' removed from a, '+' added from b
	Text string // the line
	A, B int    // the indexes in a and b where the step applies
}

// Lines returns an edit script from a to b: the longest common subsequence
// after the common head and tail are trimmed, or, when the lines that differ
// would need more than 4,000,000 comparisons, every one of them removed and
// added.
func Lines(a, b []string) []Op {
	var ops []Op
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		ops = append(ops, Op{' ', a[pre], pre, pre})
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	if len(ma)*len(mb) > 4_000_000 {
		for i, s := range ma {
			ops = append(ops, Op{'-', s, pre + i, pre})
		}
		for j, s := range mb {
			ops = append(ops, Op{'+', s, pre + len(ma), pre + j})
		}
	} else {
		// lcs[i][j] is the LCS length of ma[i:] and mb[j:].
		lcs := make([][]int, len(ma)+1)
		for i := range lcs {
			lcs[i] = make([]int, len(mb)+1)
		}
		for i := len(ma) - 1; i >= 0; i-- {
			for j := len(mb) - 1; j >= 0; j-- {
				if ma[i] == mb[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		i, j := 0, 0
		for i < len(ma) || j < len(mb) {
			switch {
			case i < len(ma) && j < len(mb) && ma[i] == mb[j]:
				ops = append(ops, Op{' ', ma[i], pre + i, pre + j})
				i++
				j++
			case i < len(ma) && (j == len(mb) || lcs[i+1][j] >= lcs[i][j+1]):
				ops = append(ops, Op{'-', ma[i], pre + i, pre + j})
				i++
			default:
				ops = append(ops, Op{'+', mb[j], pre + i, pre + j})
				j++
			}
		}
	}
	for k := 0; k < suf; k++ {
		ia, ib := len(a)-suf+k, len(b)-suf+k
		ops = append(ops, Op{' ', a[ia], ia, ib})
	}
	return ops
}
