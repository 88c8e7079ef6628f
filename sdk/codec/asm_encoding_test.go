package codec

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// asmFunc is one TEXT symbol of an assembly file: its name and its
// instructions, with the macros it invokes expanded.
type asmFunc struct {
	name  string
	line  int
	instr []string
}

var (
	asmTextRe   = regexp.MustCompile(`^TEXT\s+·(\w+)`)
	asmDefineRe = regexp.MustCompile(`^#define\s+(\w+)`)
	asmXRegRe   = regexp.MustCompile(`\bX\d+\b`)
	asmWideRe   = regexp.MustCompile(`\b[YZ]\d+\b`)
)

// parseAsm splits an amd64 assembly file into its functions, expanding the
// file's macros (a #define's body, continued by backslashes, is split into
// instructions at semicolons) wherever a function or macro invokes one.
func parseAsm(t *testing.T, path string) []asmFunc {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(src), "\n")
	macros := map[string][]string{}
	var funcs []asmFunc
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if m := asmDefineRe.FindStringSubmatch(line); m != nil {
			body := line
			for strings.HasSuffix(body, `\`) && i+1 < len(lines) {
				i++
				body = strings.TrimSuffix(body, `\`) + ";" + lines[i]
			}
			// After "#define NAME" and its parameters, if any, come the
			// instructions.
			rest := strings.TrimPrefix(body, m[0])
			if strings.HasPrefix(rest, "(") {
				_, rest, _ = strings.Cut(rest, ")")
			}
			macros[m[1]] = strings.Split(rest, ";")
			continue
		}
		if m := asmTextRe.FindStringSubmatch(line); m != nil {
			funcs = append(funcs, asmFunc{name: m[1], line: i + 1})
			continue
		}
		if len(funcs) > 0 {
			f := &funcs[len(funcs)-1]
			f.instr = append(f.instr, expandAsm(macros, line, 0)...)
		}
	}
	return funcs
}

// expandAsm returns the instructions of one line, a macro's expanded.
func expandAsm(macros map[string][]string, line string, depth int) []string {
	s, _, _ := strings.Cut(line, "//")
	s = strings.TrimSpace(s)
	if s == "" || strings.HasSuffix(s, ":") {
		return nil
	}
	name := s
	if i := strings.IndexAny(s, "( \t"); i >= 0 {
		name = s[:i]
	}
	body, ok := macros[name]
	if !ok || depth > 8 {
		return []string{s}
	}
	var out []string
	for _, b := range body {
		out = append(out, expandAsm(macros, b, depth+1)...)
	}
	return out
}

// TestAVXKernelsUseOnlyVEXEncodings holds every kernel that uses AVX (a Y or
// Z register, or a V-prefixed instruction) to VEX and EVEX encodings: a
// legacy SSE instruction on an X register (MOVL AX, X3 assembles to SSE's
// MOVD) while the upper halves of the vector registers are dirty costs a
// state transition or a merge with the upper half on Intel cores. On the VM
// of 2026-12-07 (an Emerald Rapids Xeon) six such MOVDs in qkx2Start8AVX2
// took 39 % of q4_K's encoder. It also holds every RET of such a kernel to
// follow a VZEROUPPER, so that the compiled Go code after it, which uses
// legacy SSE for floats, runs with clean upper halves.
func TestAVXKernelsUseOnlyVEXEncodings(t *testing.T) {
	files, err := filepath.Glob("*_amd64.s")
	if err != nil || len(files) == 0 {
		t.Fatalf("no amd64 assembly files found (%v)", err)
	}
	avxKernels := 0
	for _, path := range files {
		for _, f := range parseAsm(t, path) {
			avx := false
			for _, in := range f.instr {
				avx = avx || strings.HasPrefix(in, "V") || asmWideRe.MatchString(in)
			}
			if !avx {
				continue
			}
			avxKernels++
			prev := ""
			reported := map[string]bool{}
			for _, in := range f.instr {
				mnemonic, _, _ := strings.Cut(in, " ")
				mnemonic, _, _ = strings.Cut(mnemonic, "\t")
				if !strings.HasPrefix(mnemonic, "V") && asmXRegRe.MatchString(in) && !reported[in] {
					reported[in] = true
					t.Errorf("%s:%d %s: legacy SSE instruction %q in an AVX kernel; use its V form", path, f.line, f.name, in)
				}
				if mnemonic == "RET" && prev != "VZEROUPPER" {
					t.Errorf("%s:%d %s: RET after %q, not VZEROUPPER", path, f.line, f.name, prev)
				}
				prev = mnemonic
			}
		}
	}
	if avxKernels < 10 {
		t.Errorf("found %d AVX kernels; the parser no longer sees the files' functions", avxKernels)
	}
}
