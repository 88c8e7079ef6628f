// Package docs holds the user documentation; its test checks that the
// links between the pages resolve.
package docs

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// linkPattern matches the target of a Markdown inline link: ](target).
var linkPattern = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestLinksResolve: every relative link in the pages under docs/ and in
// README.md names a file that exists and, when it has a fragment, a
// heading of that file.
func TestLinksResolve(t *testing.T) {
	pages := []string{filepath.Join("..", "README.md")}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			pages = append(pages, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		path = filepath.Clean(path)
		if a, ok := anchors[path]; ok {
			return a
		}
		a, err := headingAnchors(path)
		if err != nil {
			t.Fatal(err)
		}
		anchors[path] = a
		return a
	}
	checked := 0
	for _, page := range pages {
		lines, err := proseLines(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lines {
			for _, m := range linkPattern.FindAllStringSubmatch(l.text, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, frag, _ := strings.Cut(target, "#")
				file := page
				if path != "" {
					file = filepath.Join(filepath.Dir(page), path)
					if _, err := os.Stat(file); err != nil {
						t.Errorf("%s:%d: link to %s: no such file", page, l.n, target)
						continue
					}
				}
				checked++
				if frag == "" || !strings.HasSuffix(file, ".md") {
					continue
				}
				if !anchorsOf(file)[frag] {
					t.Errorf("%s:%d: link to %s: %s has no heading with that anchor", page, l.n, target, file)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no links found: the pages were not read")
	}
}

// line is a line of a page with its number.
type line struct {
	n    int
	text string
}

// proseLines returns the lines of a Markdown file outside fenced code
// blocks.
func proseLines(path string) ([]line, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []line
	fenced := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		text := sc.Text()
		if strings.HasPrefix(text, "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out = append(out, line{n, text})
		}
	}
	return out, sc.Err()
}

// headingAnchors returns the anchors GitHub gives the headings of a
// Markdown file: a second heading of the same anchor gets "-1", a third "-2".
func headingAnchors(path string) (map[string]bool, error) {
	lines, err := proseLines(path)
	if err != nil {
		return nil, err
	}
	seen := map[string]int{}
	anchors := map[string]bool{}
	for _, l := range lines {
		title, ok := strings.CutPrefix(strings.TrimLeft(l.text, "#"), " ")
		if !ok || !strings.HasPrefix(l.text, "#") {
			continue
		}
		a := slug(title)
		if n := seen[a]; n > 0 {
			anchors[a+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors, nil
}

// slug makes a heading's anchor as GitHub does: lower case, letters,
// digits, '-' and '_' kept, spaces made '-', everything else dropped.
func slug(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(title)) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}
