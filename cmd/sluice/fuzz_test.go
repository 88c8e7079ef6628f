package main

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// FuzzParseIDs feeds tokenize --decode's id lists: never a panic, and what
// parses prints back to the same ids.
func FuzzParseIDs(f *testing.F) {
	for _, s := range []string{"128000 9906 1917", "[1, 2, 3]", "1,2,3", "", "[", "-5 x", "99999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids, err := parseIDs(s)
		if err != nil {
			return
		}
		parts := make([]string, len(ids))
		for i, id := range ids {
			parts[i] = strconv.Itoa(int(id))
		}
		again, err := parseIDs(strings.Join(parts, " "))
		if err != nil || fmt.Sprint(again) != fmt.Sprint(ids) {
			t.Fatalf("%q parsed to %v, which does not parse back: %v %v", s, ids, again, err)
		}
	})
}

// FuzzReadMessages feeds template --messages files: never a panic; an
// accepted file always yields a message list.
func FuzzReadMessages(f *testing.F) {
	for _, s := range []string{
		`[{"role":"user","content":"Hi"}]`,
		`{"messages":[{"role":"user","content":"Hi"}],"add_generation_prompt":true,"tools":[{"type":"function"}],"enable_thinking":false}`,
		`{"messages":"x"}`, `{"msgs":[]}`, `[`, `null`, `{"messages":[],"tools":null,"documents":[1]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := readMessages(bytes.NewReader(b), "-")
		if err == nil && in.Messages == nil {
			t.Fatalf("%q accepted without messages", b)
		}
	})
}

// FuzzDiffLines checks fmt's line diff: the edit script turns the first text
// into the second.
func FuzzDiffLines(f *testing.F) {
	f.Add("a\nb\nc\n", "a\nx\nc\n")
	f.Add("", "x\n")
	f.Add("path=\"a\"\n  only = 1\n", "  path = \"a\"\n  only = 1\n")
	f.Fuzz(func(t *testing.T, a, b string) {
		la, lb := splitLines([]byte(a)), splitLines([]byte(b))
		if len(la)*len(lb) > 1<<16 {
			return
		}
		var ra, rb []string
		for _, op := range diffLines(la, lb) {
			if op.kind != '+' {
				ra = append(ra, op.text)
			}
			if op.kind != '-' {
				rb = append(rb, op.text)
			}
		}
		if strings.Join(ra, "\n") != strings.Join(la, "\n") || strings.Join(rb, "\n") != strings.Join(lb, "\n") {
			t.Fatalf("the edit script of %q → %q does not rebuild them", a, b)
		}
		var out bytes.Buffer
		writeUnifiedDiff(&out, "f", []byte(a), []byte(b))
	})
}
